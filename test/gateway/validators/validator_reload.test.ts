// Hot reload of validatorsDir (gateway/validators/validator_watcher.ts and the reload in gateway/start/validator_reloads.ts):
// files added, changed, removed and broken while the gateway serves.
import t, { type Test } from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { sha256Secret, startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import type { AuditEvent } from '../../../gateway/observability/events/audit_event.js';

const form = 'application/x-www-form-urlencoded';
const auth = basicAuthorization('hot');

/** A validator that stamps its version into the token, after a short delay (so requests overlap a reload). */
const stampValidator = (grantType: string, version: string) => `
import { GrantValidationResult, type ExtensionGrantValidationContext, type ExtensionGrantValidator } from 'tessera/validator';

export default class Stamp implements ExtensionGrantValidator {
  readonly grantType: string = ${JSON.stringify(grantType)};
  async validate(context: ExtensionGrantValidationContext): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    context.result = GrantValidationResult.success('alice', this.grantType, { claims: { version: ${JSON.stringify(version)} } });
  }
}
`;

async function requestGrant(gw: TestGateway, grantType: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': form, authorization: auth },
    body: `grant_type=${grantType}`,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const versionOf = (body: Record<string, unknown>) => decodeJwt(body.access_token as string).version;

async function advertised(gw: TestGateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/.well-known/openid-configuration`);
  return ((await res.json()) as { grant_types_supported: string[] }).grant_types_supported;
}

/**
 * Makes a change to the folder and waits for the reload it causes. The watcher may see one edit as
 * several events; a reload that found nothing new (`false`) while we expect one is skipped.
 */
async function change(t: Test, gw: TestGateway, edit: () => void, expectApplied: boolean): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  // A reload boots a new worker pool: about a second, but far longer on a loaded CI machine.
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 30_000)));
  let next = gw.nextValidatorReload();
  edit();
  try {
    for (;;) {
      const applied = await Promise.race([next, timeout]);
      if (applied === 'timeout') {
        t.fail('no validator reload happened');
        return false;
      }
      if (applied === expectApplied || !expectApplied) return applied;
      next = gw.nextValidatorReload();
    }
  } finally {
    clearTimeout(timer);
  }
}

t.test('validator hot reload', async (t) => {
  const dir = t.testdir({ 'alpha.ts': stampValidator('test_alpha', 'one') });
  const logs: { msg: string; added?: string[]; removed?: string[]; changed?: string[]; problems?: { path: string; message: string }[] }[] =
    [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) });
  const events: AuditEvent[] = [];
  // The client lists only test_alpha: a grant type the config can know at start (its file exists).
  const gw = await startTestGateway(t, {
    validatorsDir: dir,
    logger,
    onEvent: (event) => void events.push(event),
    patch: (raw) => {
      (raw.clients as unknown[]).push({
        clientId: 'hot',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['test_alpha'],
        allowedScopes: ['api1'],
      });
    },
  });
  const alpha = path.join(dir, 'alpha.ts');
  const lastLog = (msg: string) => logs.filter((l) => l.msg === msg).at(-1);

  t.test('serves the validators present at start', async (t) => {
    const r = await requestGrant(gw, 'test_alpha');
    t.equal(r.status, 200);
    t.equal(versionOf(r.body), 'one');
    t.ok((await advertised(gw)).includes('test_alpha'));
  });

  // Each reload that takes effect boots a new worker pool (~1 s): the steps share them.
  t.test('fails no request in flight while a file changes, then serves its new behaviour', async (t) => {
    let running = true;
    const statuses: number[] = [];
    const versions: unknown[] = [];
    const loop = async () => {
      while (running) {
        const r = await requestGrant(gw, 'test_alpha');
        statuses.push(r.status);
        if (r.status === 200) versions.push(versionOf(r.body));
      }
    };
    const loops = Array.from({ length: 8 }, loop);
    await new Promise((resolve) => setTimeout(resolve, 100));
    t.equal(await change(t, gw, () => writeFileSync(alpha, stampValidator('test_alpha', 'two (changed)')), true), true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    running = false;
    await Promise.all(loops);
    t.ok(statuses.length > 50, `${statuses.length} requests`);
    t.same([...new Set(statuses)], [200], 'every request succeeded');
    t.same([...new Set(versions)], ['one', 'two (changed)'], 'the old version until the reload, then the new one');
    t.equal(versionOf((await requestGrant(gw, 'test_alpha')).body), 'two (changed)');
    t.match(lastLog('validators reloaded'), { added: [], removed: [], changed: ['test_alpha'] });
  });

  t.test('drops a removed file: unsupported_grant_type, and gone from discovery', async (t) => {
    t.equal(await change(t, gw, () => rmSync(alpha), true), true);
    const r = await requestGrant(gw, 'test_alpha');
    t.equal(r.status, 400);
    t.same(r.body, { error: 'unsupported_grant_type', error_description: 'The grant type is not supported.' });
    t.notOk((await advertised(gw)).includes('test_alpha'));
    t.notOk(gw.grantTypes.includes('test_alpha'));
    t.match(lastLog('validators reloaded'), { added: [], removed: ['test_alpha'], changed: [] });
  });

  t.test('registers files added while running, lists them in discovery and serves a client that lists them', async (t) => {
    t.equal(
      await change(
        t,
        gw,
        () => {
          writeFileSync(alpha, stampValidator('test_alpha', 'three (added back)'));
          writeFileSync(path.join(dir, 'beta.ts'), stampValidator('test_beta', 'beta'));
        },
        true,
      ),
      true,
    );
    t.match(lastLog('validators reloaded'), { added: ['test_alpha', 'test_beta'], removed: [], changed: [] });
    t.same(
      (await advertised(gw)).filter((g) => g.startsWith('test_')),
      ['test_alpha', 'test_beta'],
    );
    t.ok(gw.grantTypes.includes('test_beta'));
    const r = await requestGrant(gw, 'test_alpha');
    t.equal(r.status, 200);
    t.equal(versionOf(r.body), 'three (added back)');
    // A grant type new to this run: registered (not unsupported_grant_type), but no client lists it,
    // since config validation at start only knows the grant types of the files present then.
    const beta = await requestGrant(gw, 'test_beta');
    t.equal(beta.status, 400);
    t.same(beta.body, { error: 'unauthorized_client', error_description: 'The client is not allowed to use this grant type.' });
  });

  t.test('reports a broken new file and keeps the previous validators in service', async (t) => {
    const broken = path.join(dir, 'gamma.ts');
    t.equal(
      await change(t, gw, () => writeFileSync(broken, 'throw new Error("gamma is broken");\nexport default class {}\n'), false),
      false,
    );
    t.match(lastLog('validator reload refused; the previous validators stay in service'), {
      problems: [{ path: broken, message: 'cannot be imported: gamma is broken' }],
    });
    // Audit events (docs/operations.md, "Events"): each reload that took effect, and this refusal;
    // delivered on a later turn of the event loop than the reload's end.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const reloads = events.filter((e) => e.name === 'ValidatorReloaded');
    t.match(reloads.at(-1), { category: 'Configuration', outcome: 'failure', error: 'invalid_validator' });
    t.ok(
      reloads.some((e) => e.outcome === 'success' && (e.details?.added as readonly string[] | undefined)?.includes('test_beta')),
      'the reload that added test_beta',
    );
    const r = await requestGrant(gw, 'test_alpha');
    t.equal(r.status, 200);
    t.equal(versionOf(r.body), 'three (added back)');
    t.same(
      (await advertised(gw)).filter((g) => g.startsWith('test_')),
      ['test_alpha', 'test_beta'],
    );
  });
});
