// The README's first-run commands work as printed (README.md, "Two commands"): every shell
// variable they use is set by an earlier command, and run in order by sh against a gateway on the
// demo config (config/demo.json) they get tokens and an active introspection.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadConfigFile } from '../../gateway/config/load.js';
import { startGateway } from '../../gateway/start/server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
const firstRun = readme.slice(readme.indexOf('## Two commands'), readme.indexOf('\n## ', readme.indexOf('## Two commands') + 1));
const blocks = [...firstRun.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string).filter((block) => block.includes('curl'));
// One command per line: continuation lines joined, comments dropped.
const commands = blocks
  .join('\n')
  .replaceAll('\\\n', ' ')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));

t.test('every variable a command uses is set by an earlier command', async (t) => {
  t.ok(commands.length >= 4, 'the token, password, delegation and introspection commands');
  const assigned = new Set<string>();
  for (const command of commands) {
    for (const [, name] of command.matchAll(/\$\{?([A-Z_][A-Z0-9_]*)/g))
      t.ok(assigned.has(name as string), `$${name} is set before: ${command}`);
    const assignment = /^([A-Z_][A-Z0-9_]*)=/.exec(command);
    if (assignment !== null) assigned.add(assignment[1] as string);
  }
});

t.test('run in order against the demo config, they get tokens and introspect one', async (t) => {
  const demo = await loadConfigFile(path.join(root, 'config/demo.json'), { env: { TESSERA_PORT: '0' } });
  // A free management port: the demo's 9464 may be another gateway's, and a gateway takes its ports
  // to itself (docs/operations.md, "Several gateways").
  const config = { ...demo, management: { ...demo.management, port: 0 } };
  const devKeyDir = mkdtempSync(path.join(tmpdir(), 'tessera-readme-'));
  t.teardown(() => rmSync(devKeyDir, { recursive: true, force: true }));
  const gw = await startGateway({ config, devKeyDir, watchValidators: false, logger: (await import('pino')).pino({ level: 'silent' }) });
  t.teardown(() => gw.stop());

  // curl prints no newline after a body: one after each command keeps the answers apart.
  const script = ['set -e', ...commands.flatMap((command) => [command.replaceAll('http://127.0.0.1:5000', gw.url), 'echo'])].join('\n');
  const { stdout } = await promisify(execFile)('sh', ['-c', script]);
  const answers = stdout.split('\n').filter((line) => line.trim() !== '');
  t.match(JSON.parse(answers[0] as string), { token_type: 'Bearer', scope: 'api1' }, 'the client_credentials token');
  t.match(JSON.parse(answers[1] as string), { token_type: 'Bearer' }, 'the password-grant token');
  t.match(
    JSON.parse(answers.at(-1) as string),
    { active: true, aud: 'urn:api2', sub: '818727', act: { client_id: 'api1' } },
    'the delegated token, introspected by urn:api2',
  );

  // What the README says about the colon in urn:api2.
  const raw = await fetch(`${gw.url}/connect/introspect`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('urn:api2:secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'token=x',
  });
  t.equal(raw.status, 401, 'the colon left as it is: Basic reads the id as "urn"');
});
