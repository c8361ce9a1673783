// The test-facing names of src/host/sysctl/simulator.ts, which replay also runs.
export {
  createSimulatedConntrackHashsize as createFakeConntrackHashsize,
  createSimulatedSysctl as createFakeSysctl,
  type SimulatedConntrackHashsize as FakeConntrackHashsize,
  type SimulatedSysctl as FakeSysctl,
  type SimulatedSysctlOptions as FakeSysctlOptions,
} from "../simulator.ts";
