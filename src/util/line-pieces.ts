// A restore input built as whole-line pieces of about 64 KiB rather than one string: a caller
// hands the pieces to exec (ExecInput takes an iterable), which writes them one after another,
// so a script of two million lines exists once, as pieces, and never also as a string per line
// or as one string of hundreds of megabytes with a UTF-8 copy beside it.

/** Characters per piece (a piece ends after the line that reaches it). */
export const PIECE_CHARS = 1 << 16;

export class LinePieces {
  private readonly done: string[] = [];
  private open: string[] = [];
  private chars = 0;
  private count = 0;

  /** Appends one line (without its newline). */
  add(line: string): void {
    this.open.push(line);
    this.count++;
    this.chars += line.length + 1;
    if (this.chars >= PIECE_CHARS) this.close();
  }

  /** Lines added so far. */
  get lines(): number {
    return this.count;
  }

  /** The pieces, every line newline-terminated; none when no line was added. */
  finish(): string[] {
    this.close();
    return this.done;
  }

  private close(): void {
    if (this.open.length === 0) return;
    this.done.push(`${this.open.join("\n")}\n`);
    this.open = [];
    this.chars = 0;
  }
}
