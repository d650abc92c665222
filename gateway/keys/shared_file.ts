import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * A secret file made once and shared by every process of one working directory (the development
 * signing key and the page secret of the memory store, under `.tessera/`): of several processes
 * starting at once, one writes it (`wx`, mode 0600) and the others read what it wrote, waiting a
 * little while it may still be half-written. `make` runs only when the file is missing; `parse`
 * throws on what is not (yet) a complete value.
 */
export async function readOrMakeOnce<T>(
  file: string,
  make: () => Promise<{ value: T; text: string }>,
  parse: (text: string) => T | Promise<T>,
): Promise<T> {
  if (!(await exists(file))) {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const made = await make();
    try {
      await writeFile(file, made.text, { flag: 'wx', mode: 0o600 });
      return made.value;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await parse(await readFile(file, 'utf8'));
    } catch (err) {
      if (attempt >= 20) throw err;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
