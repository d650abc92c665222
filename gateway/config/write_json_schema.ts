/**
 * Writes `config/tessera.schema.json` from the zod schema (`npm run schema`), so editors can check
 * and complete config files. A test compares the committed file with a fresh one, so it cannot go
 * stale.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { configSchema } from './schema.js';

/** Where the generated schema lives, next to the demo config that references it. */
export const jsonSchemaPath = fileURLToPath(new URL('../../config/tessera.schema.json', import.meta.url));

/**
 * The config file's JSON Schema as the text written to disk.
 *
 * `io: 'input'` describes what a person writes (fields with defaults are optional), not what the
 * loader returns.
 */
export function generateJsonSchema(): string {
  const schema = z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12' });
  return `${JSON.stringify(schema, null, 2)}\n`;
}

async function writeJsonSchema(): Promise<void> {
  await writeFile(jsonSchemaPath, generateJsonSchema());
  process.stdout.write(`wrote ${jsonSchemaPath}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await writeJsonSchema();
}
