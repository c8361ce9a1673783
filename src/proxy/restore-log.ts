// What an operator needs in the log when iptables-restore rejects our input. The host client's
// IptablesRestoreError formats itself: the reason plus the input lines around the one
// iptables-restore blamed (three either side, as upstream logs them).

import type { KV } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";

interface FormattableError {
  formatForLog(): string;
}

function isFormattable(err: unknown): err is FormattableError {
  return (
    typeof err === "object" && err !== null && typeof (err as FormattableError).formatForLog === "function"
  );
}

/** Log fields for a failed restore. */
export function restoreFailureFields(err: unknown): KV {
  if (isFormattable(err)) return { err: err.formatForLog() };
  return { err: errText(err) };
}
