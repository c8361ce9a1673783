// The test-facing names of src/host/iptables/simulator/restore.ts, which replay also runs.
export {
  applyRestore,
  type RestoreRequest,
} from "../simulator/restore.ts";
