import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

/** Editors write a file in several steps; wait for quiet before reloading. */
const settleMs = 150;

/**
 * Calls `onChange` (never twice at once) after files change in `dir` or its subfolders (validator
 * modules, their helper modules, their data) or in a data file a validator declares outside it
 * (`dataFiles()`, asked again after every reload). Returns a stop function. A missing folder is
 * not watched: there is nothing to reload.
 */
export function watchValidators(
  dir: string,
  onChange: () => Promise<void>,
  logger: Logger,
  dataFiles: () => readonly string[] = () => [],
): () => void {
  let watcher: FSWatcher;
  try {
    watcher = watch(dir, { persistent: false, recursive: true });
  } catch (err) {
    logger.debug({ dir, err }, 'validators folder not watched');
    return () => {};
  }
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const changed = (): void => {
    clearTimeout(timer);
    timer = setTimeout(run, settleMs);
  };
  // Data files are watched through their folders: an editor or a deploy that replaces a file
  // (write a new one, rename it over the old) leaves a watch on the file itself on the old inode.
  const outside = new Map<string, { watcher: FSWatcher; names: Set<string> }>();
  const watchDataFiles = (): void => {
    const wanted = new Map<string, Set<string>>();
    for (const file of dataFiles()) {
      if (!path.relative(dir, file).startsWith('..')) continue;
      const folder = path.dirname(file);
      const names = wanted.get(folder) ?? new Set<string>();
      names.add(path.basename(file));
      wanted.set(folder, names);
    }
    for (const [folder, entry] of outside) {
      if (!wanted.has(folder)) {
        entry.watcher.close();
        outside.delete(folder);
      }
    }
    for (const [folder, names] of wanted) {
      const existing = outside.get(folder);
      if (existing !== undefined) {
        existing.names.clear();
        for (const name of names) existing.names.add(name);
        continue;
      }
      try {
        const folderWatcher = watch(folder, { persistent: false }, (_event, name) => {
          if (name === null || outside.get(folder)?.names.has(name.toString()) === true) changed();
        });
        folderWatcher.on('error', (err) => logger.warn({ folder, err }, 'validator data folder watch failed'));
        outside.set(folder, { watcher: folderWatcher, names });
      } catch (err) {
        logger.warn({ folder, err }, 'validator data folder not watched');
      }
    }
  };
  const run = (): void => {
    if (running !== undefined) {
      again = true;
      return;
    }
    running = onChange()
      .catch((err: unknown) => logger.error({ err }, 'validator reload failed'))
      .finally(() => {
        running = undefined;
        watchDataFiles();
        if (again) {
          again = false;
          run();
        }
      });
  };
  watcher.on('change', changed);
  watcher.on('error', (err) => logger.warn({ dir, err }, 'validators folder watch failed; hot reload is off'));
  watchDataFiles();
  return () => {
    clearTimeout(timer);
    watcher.close();
    for (const entry of outside.values()) entry.watcher.close();
  };
}
