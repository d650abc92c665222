import t from 'tap';
import { readFile } from 'node:fs/promises';
import { generateJsonSchema, jsonSchemaPath } from '../../../gateway/config/write_json_schema.js';

t.test('the committed config/tessera.schema.json matches the zod schema (run "npm run schema")', async (t) => {
  t.equal(await readFile(jsonSchemaPath, 'utf8'), generateJsonSchema());
});

t.test('the schema requires only the issuer and rejects unknown fields', async (t) => {
  const schema = JSON.parse(generateJsonSchema()) as {
    required: string[];
    additionalProperties: boolean;
    properties: Record<string, unknown>;
  };
  t.same(schema.required, ['issuer']);
  t.equal(schema.additionalProperties, false);
  t.ok('demoCredentials' in schema.properties);
});

t.test('the demo config points editors at the schema', async (t) => {
  const demo = JSON.parse(await readFile(new URL('../../../config/demo.json', import.meta.url), 'utf8')) as { $schema?: string };
  t.equal(demo.$schema, './tessera.schema.json');
});
