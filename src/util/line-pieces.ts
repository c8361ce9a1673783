// A restore input built as whole-line pieces of about 64 KiB rather than one string: a caller
// hands the pieces to exec (ExecInput takes an iterable), which writes them one after another,
// so a script of two million lines exists once, as pieces, and never also as a string per line
// or as one string of hundreds of megabytes with a UTF-8 copy beside it.

/** Characters per piece (a piece ends after the line that reaches it). */
export const PIECE_CHARS = 1 << 16;

/** Where lines are written as parts: LinePieces, or NO_LINES to check them without keeping any. */
export interface LineSink {
  part(text: string): void;
  endLine(): void;
}

/** A sink that keeps nothing: for a pass that only checks what it would write. */
export const NO_LINES: LineSink = { part() {}, endLine() {} };

export class LinePieces implements LineSink {
  private done: string[] = [];
  /** The open piece's parts, joined when it closes (one array, emptied and used again). */
  private readonly open: string[] = [];
  private chars = 0;
  private count = 0;

  /** Appends one line (without its newline). */
  add(line: string): void {
    this.part(line);
    this.endLine();
  }

  /**
   * Appends text to the current line. Writing a line as parts that the caller keeps anyway
   * (an address, a word shared by many lines) copies them into the piece as they are, with no
   * string made for the line itself.
   */
  part(text: string): void {
    this.open.push(text);
    this.chars += text.length;
  }

  /** Ends the current line. */
  endLine(): void {
    this.open.push("\n");
    this.chars++;
    this.count++;
    if (this.chars >= PIECE_CHARS) this.close();
  }

  /** Lines added so far. */
  get lines(): number {
    return this.count;
  }

  /** Whether a piece is complete (drain hands it over). */
  get ready(): boolean {
    return this.done.length > 0;
  }

  /** The complete pieces so far, handed over and no longer kept (the open one stays open). */
  drain(): string[] {
    const pieces = this.done;
    this.done = [];
    return pieces;
  }

  /** The pieces, every line newline-terminated; none when no line was added. */
  finish(): string[] {
    this.close();
    return this.done;
  }

  private close(): void {
    if (this.open.length === 0) return;
    this.done.push(this.open.join(""));
    this.open.length = 0;
    this.chars = 0;
  }
}
