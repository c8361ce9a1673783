// Socket errors as the real-kernel test scripts report them: one short word per way a
// connection can fail, so assertions read "refused" or "timeout" rather than errno codes.

/** "refused" (ECONNREFUSED: an ICMP port-unreachable / REJECT / RST), "timeout", "unreachable", "reset", or the errno code. */
export function classifySocketError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? "";
  switch (code) {
    case "ECONNREFUSED":
      return "refused";
    case "ETIMEDOUT":
      return "timeout";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "unreachable";
    case "ECONNRESET":
    case "EPIPE":
      return "reset";
    default:
      return code || (err instanceof Error ? err.message : String(err));
  }
}
