// The test-facing names of src/host/iptables/simulator/tables.ts, which replay also runs.
export {
  BUILTIN_CHAINS,
  EXTENSION_TARGETS,
  type Failure,
  isTable,
  MAX_CHAIN_NAME,
  type SimulatedChain as FakeChain,
  type SimulatedRule as FakeRule,
  SimulatedTable as FakeTable,
  STANDARD_TARGETS,
} from "../simulator/tables.ts";
