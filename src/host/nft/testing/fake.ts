// The test-facing names of src/host/nft/simulator.ts, which replay also runs.
export {
  SIMULATED_NFT_RELEASES as FAKE_NFT_RELEASES,
  SIMULATED_NFT_VERSION as FAKE_NFT_VERSION,
  SimulatedNft as FakeNft,
  type SimulatedNftChain as FakeNftChain,
  type SimulatedNftMap as FakeNftMap,
  type SimulatedNftSet as FakeNftSet,
  type SimulatedNftTable as FakeNftTable,
  type SimulatedNftVersion as FakeNftVersion,
} from "../simulator.ts";
