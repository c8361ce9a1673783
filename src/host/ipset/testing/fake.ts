// The test-facing names of src/host/ipset/simulator.ts, which replay also runs.
export {
  createSimulatedIpset as createFakeIpset,
  SimulatedIpset as FakeIpset,
  type SimulatedIpsetOptions as FakeIpsetOptions,
} from "../simulator.ts";
