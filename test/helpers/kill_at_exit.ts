import type { ChildProcess } from 'node:child_process';

const running = new Set<ChildProcess>();
let hookInstalled = false;

/**
 * Kills `child` with SIGKILL if this process exits while it still runs, so that a test file or a
 * bench run that fails half-way leaves no server behind.
 */
export function killAtExit(child: ChildProcess): void {
  if (!hookInstalled) {
    hookInstalled = true;
    // 'exit' handlers must be synchronous: a plain kill is all there is time for.
    process.on('exit', () => {
      for (const live of running) live.kill('SIGKILL');
    });
  }
  running.add(child);
  child.once('exit', () => running.delete(child));
}
