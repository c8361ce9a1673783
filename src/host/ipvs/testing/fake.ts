// The test-facing names of src/host/ipvs/simulator.ts, which replay also runs.
export {
  createSimulatedIpvs as createFakeIpvs,
  KERNEL_SCHEDULERS,
  SimulatedIpvs as FakeIpvs,
  type SimulatedIpvsOptions as FakeIpvsOptions,
} from "../simulator.ts";
