// The text of a caught value for a log line or an error message: an Error's message, anything
// else as a string (a rejected promise can carry any value).

export function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
