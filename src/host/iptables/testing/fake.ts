// The test-facing names of src/host/iptables/simulator/iptables.ts, which replay also runs.
export {
  createSimulatedIptables as createFakeIptables,
  type SaveOptions,
  SimulatedIptables as FakeIptables,
  type SimulatedIptablesOptions as FakeIptablesOptions,
} from "../simulator/iptables.ts";
