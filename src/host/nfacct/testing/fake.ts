// The test-facing names of src/host/nfacct/simulator.ts, which replay also runs.
export { SimulatedNfacct as FakeNfacct } from "../simulator.ts";
