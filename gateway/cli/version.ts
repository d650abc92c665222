/** `tessera --version`: the version in Tessera's package.json. */
import { readFileSync } from 'node:fs';

/**
 * The package's version. This file runs from `gateway/cli/` (sources) or `dist/gateway/cli/`
 * (built), so the package.json is two or three folders up: the first one that is Tessera's.
 */
export function packageVersion(): string {
  for (const relative of ['../../package.json', '../../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'tessera' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // not there: the other layout
    }
  }
  return 'unknown';
}
