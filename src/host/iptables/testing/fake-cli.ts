// The test-facing names of src/host/iptables/simulator/cli.ts, which replay also runs.
export {
  type CliState,
  runIptablesCli,
} from "../simulator/cli.ts";
