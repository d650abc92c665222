import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from 'pino';

/** Editors write a file in several steps; wait for quiet before reloading. */
const settleMs = 150;

/**
 * Calls `onChange` (never twice at once) after files in `dir` change. Returns a stop function.
 * A missing folder is not watched: there is nothing to reload.
 */
export function watchValidators(dir: string, onChange: () => Promise<void>, logger: Logger): () => void {
  let watcher: FSWatcher;
  try {
    watcher = watch(dir, { persistent: false });
  } catch (err) {
    logger.debug({ dir, err }, 'validators folder not watched');
    return () => {};
  }
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const run = (): void => {
    if (running !== undefined) {
      again = true;
      return;
    }
    running = onChange()
      .catch((err: unknown) => logger.error({ err }, 'validator reload failed'))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          run();
        }
      });
  };
  watcher.on('change', () => {
    clearTimeout(timer);
    timer = setTimeout(run, settleMs);
  });
  watcher.on('error', (err) => logger.warn({ dir, err }, 'validators folder watch failed; hot reload is off'));
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}
