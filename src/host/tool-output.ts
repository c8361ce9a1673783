// Reading what a host tool printed, the one way every typed client's error message does it.

/** The first non-blank line of a tool's output (trimmed), skipping lines `skip` rejects. */
export function firstLine(text: string, skip: (line: string) => boolean = () => false): string {
  return (
    text
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "" && !skip(l)) ?? "(no output)"
  );
}
