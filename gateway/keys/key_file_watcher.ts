import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

/** Editors and `mv` write a key file in several steps; wait for quiet before reading it. */
const settleMs = 150;

/**
 * Calls `onChange` after a configured key file changes. Watches each file's folder rather than the
 * file: replacing a file by renaming another over it (the safe way to update a key, and what
 * Kubernetes does to a mounted Secret) ends a watch on the file itself. Returns a stop function.
 */
export function watchKeyFiles(files: readonly string[], onChange: () => void, logger: Logger): () => void {
  const namesByDir = new Map<string, Set<string>>();
  for (const file of files) {
    const dir = path.dirname(file);
    const names = namesByDir.get(dir) ?? new Set<string>();
    names.add(path.basename(file));
    namesByDir.set(dir, names);
  }
  let timer: NodeJS.Timeout | undefined;
  const watchers: FSWatcher[] = [];
  for (const [dir, names] of namesByDir) {
    try {
      const watcher = watch(dir, { persistent: false }, (_event, name) => {
        // Kubernetes swaps a `..data` symlink: any change there may be ours.
        if (name !== null && !names.has(name) && !name.startsWith('..')) return;
        clearTimeout(timer);
        timer = setTimeout(onChange, settleMs);
      });
      watcher.on('error', (err) => logger.warn({ dir, err }, 'signing key folder watch failed; reload keys with SIGHUP'));
      watchers.push(watcher);
    } catch (err) {
      logger.warn({ dir, err }, 'signing key folder not watched; reload keys with SIGHUP');
    }
  }
  return () => {
    clearTimeout(timer);
    for (const watcher of watchers) watcher.close();
  };
}
