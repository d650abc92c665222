/**
 * The secret behind the pages' session cookie and CSRF tokens (gateway/pages/session.ts): its own
 * secret, not derived from a signing key, so a key rotation leaves sign-ins and open forms alone
 * (docs/security.md, "Sessions and CSRF"). Generated once and shared by every gateway: in the
 * store on Redis, in a file under `.tessera/` on the memory store (one process anyway).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Store } from '../../workers/store/store.js';
import type { LoadedConfig } from '../config/load.js';

// Renewed (the same value) at every start, so it lasts as long as gateways start now and then.
const storedTtlMs = 10 * 365 * 86_400_000;

export async function loadPageSecret(config: Pick<LoadedConfig, 'store'>, store: Store, devKeyDir: string): Promise<string> {
  const candidate = randomBytes(32).toString('base64url');
  if (config.store.type !== 'memory') {
    const key = { kind: 'key', id: 'page-secret' } as const;
    const secret = await store.putIfAbsent<string>(key, candidate, storedTtlMs);
    await store.set(key, secret, storedTtlMs);
    return secret;
  }
  const file = path.join(devKeyDir, 'page-secret');
  await mkdir(devKeyDir, { recursive: true, mode: 0o700 });
  try {
    // `wx`: of several processes starting at once, one writes and the others read its secret.
    await writeFile(file, `${candidate}\n`, { flag: 'wx', mode: 0o600 });
    return candidate;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  for (let attempt = 0; ; attempt++) {
    const secret = (await readFile(file, 'utf8')).trim();
    if (secret.length >= 32 || attempt >= 20) {
      if (secret.length < 32) throw new Error(`${file}: the page secret is too short; delete the file to generate a new one`);
      return secret;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}
