// The test-facing names of src/exec/simulated.ts, which replay also runs.
export {
  type ExecHandler,
  fail,
  ok,
  SimulatedExec as FakeExec,
} from "../simulated.ts";
