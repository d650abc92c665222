/**
 * One status line on stderr, rewritten in place on a terminal; elsewhere (CI, a pipe) each phase
 * is printed once so the log stays readable.
 */
export class Progress {
  private readonly tty = process.stderr.isTTY === true;
  private shown = false;
  private lastPhase = '';

  /** A new phase: always printed (once) when not on a terminal. */
  phase(text: string): void {
    this.lastPhase = text;
    if (this.tty) this.draw(text);
    else process.stderr.write(`${text}\n`);
  }

  /** A live update within the current phase: only drawn on a terminal. */
  update(detail: string): void {
    if (this.tty) this.draw(`${this.lastPhase} · ${detail}`);
  }

  /** Clears the line before ordinary output. */
  clear(): void {
    if (this.tty && this.shown) {
      process.stderr.write('\r\x1b[K');
      this.shown = false;
    }
  }

  /** Prints a line above the status line. */
  log(line: string): void {
    this.clear();
    process.stdout.write(`${line}\n`);
  }

  private draw(text: string): void {
    const width = process.stderr.columns ?? 120;
    process.stderr.write(`\r\x1b[K${text.length > width - 1 ? `${text.slice(0, width - 2)}…` : text}`);
    this.shown = true;
  }
}
