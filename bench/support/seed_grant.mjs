// A bench-only grant module: writes records straight into the gateway's own store, so that the
// load can redeem refresh tokens, authorization codes and device codes that no earlier request
// issued. Loaded by bench/gateway_process.ts through `startGateway({ grantModules })`, the
// extension point for grant handlers: it runs in every worker thread and uses the worker's store
// (on the memory store, the main thread's MemoryStore through the store channel; on Redis, the
// worker's connection), with the handle and key code the server itself uses
// (workers/tokens/refresh_token_handle). Only the bench config's `bench-seeder` client may call it.
//
// Plain JavaScript: compiled (`dist/`) workers load no TypeScript.
//
// The module URL names the gateway's code: `?base=<URL of dist/ or of the checkout>&ext=js|ts`.
//
// Request: POST /connect/token, Basic bench-seeder, `grant_type=urn:tessera:bench:seed&seed=<JSON>`
// where JSON is a SeedRequest (bench/support/seed.ts). Answer: a token-response-shaped object
// whose `items` member lists what was written (see bench/support/seed.ts).
import { createHash, randomBytes } from 'node:crypto';

const here = new URL(import.meta.url);
const base = here.searchParams.get('base');
const ext = here.searchParams.get('ext') === 'ts' ? 'ts' : 'js';
if (base === null) throw new Error('seed_grant.mjs needs ?base=<URL of the gateway code>');
// core/records/ since the rooms of issue 31; workers/tokens/ in a --baseline-root from before them.
const { newFamilyHandle, newFamilyId } = await import(new URL(`core/records/refresh_token_handle.${ext}`, base).href).catch((err) => {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
  return import(new URL(`workers/tokens/refresh_token_handle.${ext}`, base).href);
});

export const seedGrantType = 'urn:tessera:bench:seed';

/** Store writes in flight at once per request. */
const parallel = 256;

function s256(verifier) {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** One record and what the load needs to redeem it. */
function build(spec, now) {
  const family = newFamilyId();
  const ttl = spec.lifetimeS * 1000;
  switch (spec.type) {
    case 'refresh_token': {
      // As issueTokens (workers/grants/token_issuance.ts) writes one: RefreshTokenRecord.
      const handle = newFamilyHandle('rt', family);
      const record = {
        v: 1,
        clientId: spec.clientId,
        subject: spec.subject,
        scopes: spec.scopes,
        claims: spec.claims,
        family,
        createdAt: now,
        absoluteExpiresAt: now + ttl,
        expiresAt: now + ttl,
      };
      return { key: handle.key, record, ttl, item: { refresh_token: handle.handle } };
    }
    case 'authorization_code': {
      // As the authorize endpoint (gateway/pages/authorize_endpoint.ts) writes one, with PKCE S256.
      const handle = newFamilyHandle('code', family);
      const verifier = randomBytes(32).toString('base64url');
      const record = {
        v: 1,
        clientId: spec.clientId,
        redirectUri: spec.redirectUri,
        subject: spec.subject,
        scopes: spec.scopes,
        claims: spec.claims,
        nonce: spec.nonce,
        sid: spec.sid,
        codeChallenge: s256(verifier),
        family,
        createdAt: now,
      };
      return { key: handle.key, record, ttl, item: { code: handle.handle, code_verifier: verifier } };
    }
    case 'device_code': {
      // As the device authorization endpoint writes one (gateway/endpoints/device_authorization_endpoint.ts),
      // still pending: no user has approved it.
      const handle = newFamilyHandle('dc', family);
      const record = { v: 1, clientId: spec.clientId, scopes: spec.scopes, expiresAt: now + ttl, status: 'pending', family };
      return { key: handle.key, record, ttl, item: { device_code: handle.handle } };
    }
    default:
      throw new Error(`unknown seed type ${JSON.stringify(spec.type)}`);
  }
}

/**
 * One write, tried again when the store times out: 256 writes in flight on a worker of a machine
 * busy with other work can outlast the store's command timeout (500 ms), and the whole seed then
 * failed with 503 (refresh_token on Redis, 2026-11-28, load average 14 on 2 vCPUs). A `set` of the
 * same key and record is idempotent, so a write that landed before its timeout may be written again.
 */
async function write(store, key, record, ttl) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.set(key, record, ttl);
    } catch (err) {
      if (err?.code !== 'store_unavailable' || attempt >= 5) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

export default {
  grantType: seedGrantType,
  async handle(request, services) {
    const spec = JSON.parse(request.params.seed ?? 'null');
    if (spec === null || typeof spec !== 'object' || !Number.isInteger(spec.count) || spec.count < 1) {
      throw new Error('seed: expected {"type", "count", …}');
    }
    const now = services.now();
    const items = [];
    let writes = [];
    for (let i = 0; i < spec.count; i++) {
      const { key, record, ttl, item } = build(spec, now);
      items.push(item);
      writes.push(write(services.store, key, record, ttl));
      if (writes.length >= parallel) {
        await Promise.all(writes);
        writes = [];
      }
    }
    await Promise.all(writes);
    return { access_token: '', token_type: 'Bearer', expires_in: 0, scope: '', items };
  },
};
