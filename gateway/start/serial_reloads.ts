/** Config reloads, validator reloads and the page secret's arrival all start pools: one at a time. */
export class SerialReloads {
  private last: Promise<unknown> = Promise.resolve();

  /** Runs `step` after the steps before it, whether they succeeded or not. */
  run<T>(step: () => Promise<T>): Promise<T> {
    const run = this.last.then(step, step);
    this.last = run.catch(() => {});
    return run;
  }
}
