import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../support/child_server.js';

export interface GatewayTarget {
  kind: 'dist' | 'source';
  /** Why this target, when it is not the one asked for or the default. */
  note: string | null;
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => path.join(dir, file));
}

/** `--baseline-root`: the other checkout, resolved to dist/ or its sources on its own. */
export interface BaselineCheckout {
  root: string;
  target: GatewayTarget;
}

/** Source files whose compiled twin in dist/ is missing or older than them. */
export function staleDistFiles(root: string): string[] {
  const stale: string[] = [];
  for (const folder of ['gateway', 'core', 'wire', 'workers']) {
    for (const source of sourceFiles(path.join(root, folder))) {
      const relative = path.relative(root, source);
      const compiled = path.join(root, 'dist', relative.replace(/\.ts$/, '.js'));
      if (!existsSync(compiled) || statSync(compiled).mtimeMs < statSync(source).mtimeMs) stale.push(relative);
    }
  }
  return stale;
}

/**
 * The compiled gateway is what users run, so it is the default, but only when dist/ matches the
 * sources: a stale build would measure code that no longer exists.
 */
export function resolveTarget(requested: 'dist' | 'source' | undefined, root: string = repoRoot): GatewayTarget {
  // dist/gateway/server.js in a checkout from before the rooms of issue 31.
  const hasDist = existsSync(path.join(root, 'dist/gateway/start/server.js')) || existsSync(path.join(root, 'dist/gateway/server.js'));
  if (requested === 'source') return { kind: 'source', note: null };
  if (!hasDist) {
    if (requested === 'dist') throw new Error('--target dist: there is no dist/gateway/start/server.js (run `npm run build`)');
    return { kind: 'source', note: 'no dist/ build: running the TypeScript sources (`npm run build` to bench what users run)' };
  }
  const stale = staleDistFiles(root);
  if (stale.length === 0) return { kind: 'dist', note: null };
  const list = `${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ` and ${stale.length - 3} more` : ''}`;
  if (requested === 'dist') return { kind: 'dist', note: `dist/ is older than ${list}: measuring the stale build as asked` };
  return {
    kind: 'source',
    note: `dist/ is older than ${list}: running the TypeScript sources instead (\`npm run build\`, then rerun, to bench dist/)`,
  };
}
