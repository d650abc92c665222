import { readdirSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

/** Editors write a file in several steps; wait for quiet before reloading. */
const settleMs = 150;

/** Editor swap and backup files, and dot folders (`.git`): the loader reads none of them. */
function ignoredName(name: string): boolean {
  return path.basename(name).startsWith('.');
}

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
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const changed = (): void => {
    clearTimeout(timer);
    timer = setTimeout(run, settleMs);
  };
  // One non-recursive watch per folder, not `watch(dir, { recursive: true })`: on Linux, Node 20's
  // recursive watch follows each file by its inode, so a file replaced rather than written in place
  // (`git checkout`, an editor's safe save, `sed -i`) is never seen again and hot reload stops for
  // good. A folder's watch reports every name in it, whichever inode it has.
  const folders = new Map<string, FSWatcher>();
  const watchFolder = (folder: string): boolean => {
    if (folders.has(folder)) return true;
    try {
      const folderWatcher = watch(folder, { persistent: false }, (_event, name) => {
        if (name === null || !ignoredName(name.toString())) changed();
      });
      folderWatcher.on('error', (err) => {
        // The folder was removed (or replaced): the next sync watches what is there then.
        folderWatcher.close();
        folders.delete(folder);
        if (folder === dir) logger.warn({ dir, err }, 'validators folder watch failed; hot reload is off');
        else changed();
      });
      folders.set(folder, folderWatcher);
      return true;
    } catch (err) {
      if (folder === dir) logger.debug({ dir, err }, 'validators folder not watched');
      return false;
    }
  };
  /** Watches the subfolders that appeared since the last sync and forgets the ones that went. */
  const syncFolders = (): void => {
    const present = new Set<string>();
    const walk = (folder: string): void => {
      present.add(folder);
      let entries: Dirent[];
      try {
        entries = readdirSync(folder, { withFileTypes: true });
      } catch {
        return;
      }
      for (const entry of entries) {
        if (entry.isDirectory() && !ignoredName(entry.name) && entry.name !== 'node_modules') walk(path.join(folder, entry.name));
      }
    };
    walk(dir);
    for (const [folder, folderWatcher] of folders) {
      if (folder !== dir && !present.has(folder)) {
        folderWatcher.close();
        folders.delete(folder);
      }
    }
    for (const folder of present) if (folder !== dir) watchFolder(folder);
  };
  if (!watchFolder(dir)) return () => {};
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
    syncFolders();
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
  syncFolders();
  watchDataFiles();
  return () => {
    clearTimeout(timer);
    for (const folderWatcher of folders.values()) folderWatcher.close();
    folders.clear();
    for (const entry of outside.values()) entry.watcher.close();
  };
}
