// `tessera keys list` and `tessera keys rotate` on key files and on the memory store (the Redis
// cases run against two gateways in test/gateway/keys/key_rotation.test.ts).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCliCommand } from '../../helpers/cli_in_process.js';
import { keysListCommand } from '../../../gateway/cli/keys_list_command.js';
import { keysRotateCommand } from '../../../gateway/cli/keys_rotate_command.js';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { baseTestConfig } from '../../helpers/test_gateway.js';

const dir = t.testdir({});
const [first, second] = await Promise.all([generateSigningKey('ES256'), generateSigningKey('ES256')]);
writeFileSync(path.join(dir, 'a.jwk.json'), JSON.stringify(first.jwk));
writeFileSync(path.join(dir, 'b.jwk.json'), JSON.stringify(second.jwk));
const withFiles = path.join(dir, 'files.json');
writeFileSync(withFiles, JSON.stringify({ ...baseTestConfig(), signing: { keys: [{ file: 'a.jwk.json' }, { file: 'b.jwk.json' }] } }));
const onMemory = path.join(dir, 'memory.json');
writeFileSync(onMemory, JSON.stringify(baseTestConfig()));

t.test('keys list shows key files in order: the first active, the others published', async (t) => {
  const { code, stdout } = await runCliCommand(keysListCommand, ['--config', withFiles]);
  t.equal(code, 0);
  const lines = stdout.trimEnd().split('\n');
  t.match(lines[0], /^KID +ALG +STATE +CREATED +ACTIVATES +EXPIRES$/);
  t.match(lines[1], new RegExp(`^${first.kid} +ES256 +active +- +- +-$`));
  t.match(lines[2], new RegExp(`^${second.kid} +ES256 +published +- +- +-$`));
});

t.test('keys rotate refuses key files and says how to rotate them', async (t) => {
  const { code, stderr } = await runCliCommand(keysRotateCommand, ['--config', withFiles]);
  t.equal(code, 1);
  t.match(stderr, /^error: this config names key files \(signing\.keys\): add a key with "tessera keys generate"/);
});

t.test('on the memory store both explain that the keys live inside the gateway', async (t) => {
  await t.rejects(runCliCommand(keysRotateCommand, ['--config', onMemory]), /the memory store lives inside the running gateway/);
  await t.rejects(runCliCommand(keysListCommand, ['--config', onMemory]), /the memory store lives inside the running gateway/);
});

t.test('--config is required', async (t) => {
  await t.rejects(runCliCommand(keysListCommand, []), { name: 'UsageError', message: '--config FILE is required' });
});
