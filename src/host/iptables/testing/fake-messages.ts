// The test-facing names of src/host/iptables/simulator/messages.ts, which replay also runs.
export {
  cliFailure,
  cliParameterProblem,
  type Flavor,
  lockHeld,
  programName,
  restoreBadArgument,
  restoreBadTable,
  restoreCommitExpected,
  restoreFailure,
  restoreLineFailed,
  restoreParameterProblem,
  restoreProgram,
  versionBanner,
} from "../simulator/messages.ts";
