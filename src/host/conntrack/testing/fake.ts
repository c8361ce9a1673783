// The test-facing names of src/host/conntrack/simulator.ts, which replay also runs.
export {
  type ConntrackFlow,
  type FlowTuple,
  flow,
  SimulatedConntrack as FakeConntrack,
} from "../simulator.ts";
