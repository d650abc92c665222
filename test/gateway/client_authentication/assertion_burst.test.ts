// Client assertions under the failure throttle (docs/security.md, "Throttles"), over real HTTP
// against a real gateway: a parallel burst of bad assertions gets at most the limit verified by
// the workers, counted before they check them; replayed copies of a good assertion are no guesses
// and block nobody; a good client's own burst is never refused. Source addresses are chosen with
// node:http (fetch cannot), one per subtest.
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import t from 'tap';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { startTestGateway } from '../../helpers/test_gateway.js';

const assertionType = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const limit = 10;

async function keyPair(): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid: 'k' } };
}

const good = await keyPair();
// Another key under the client's kid: its assertions pass every claim check and fail the signature.
const forger = await keyPair();

const gw = await startTestGateway(t, {
  patch: (raw) => {
    (raw.clients as unknown[]).push({
      clientId: 'pk',
      jwks: { keys: [good.jwk] },
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    });
    raw.throttling = { clientAuthentication: { maxFailures: limit, windowSeconds: 60 } };
  },
});

function sign(privateKey: CryptoKey): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: 'pk', sub: 'pk', aud: gw.config.issuer, iat: now, exp: now + 60, jti: randomUUID() })
    .setProtectedHeader({ alg: 'ES256', kid: 'k' })
    .sign(privateKey);
}

function token(from: string, assertion: string): Promise<{ status: number; body: string }> {
  const url = new URL(gw.tokenUrl);
  const body = new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: assertionType,
    client_assertion: assertion,
  }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const count = (answers: readonly { status: number }[], status: number) => answers.filter((a) => a.status === status).length;

t.test('a parallel burst of 100 distinct bad assertions gets the limit verified', async (t) => {
  const assertions = await Promise.all(Array.from({ length: 100 }, () => sign(forger.privateKey)));
  const answers = await Promise.all(assertions.map((assertion) => token('127.0.0.2', assertion)));
  t.equal(count(answers, 401), limit, 'ten verified by a worker and refused');
  t.equal(count(answers, 429), 100 - limit, 'every other one refused before any worker saw it');
  t.equal((await token('127.0.0.2', await sign(good.privateKey))).status, 429, 'that address is blocked');
  t.equal((await token('127.0.0.3', await sign(good.privateKey))).status, 200, 'the client, from its own address, is not');
});

t.test('a parallel burst of one bad assertion repeated 100 times gets the limit verified', async (t) => {
  const assertion = await sign(forger.privateKey);
  const answers = await Promise.all(Array.from({ length: 100 }, () => token('127.0.0.4', assertion)));
  t.equal(count(answers, 401), limit);
  t.equal(count(answers, 429), 100 - limit);
});

t.test('49 copies of one valid assertion: one token, 48 replays, and no block', async (t) => {
  const assertion = await sign(good.privateKey);
  const answers = await Promise.all(Array.from({ length: 49 }, () => token('127.0.0.5', assertion)));
  t.equal(count(answers, 200), 1, 'exactly one passes');
  const replays = answers.filter((a) => a.status === 401);
  t.equal(replays.length, 48, 'the others are invalid_client, none 429');
  t.same(
    new Set(replays.map((a) => a.body)),
    new Set(['{"error":"invalid_client","error_description":"The client assertion was already used."}']),
  );
  t.equal((await token('127.0.0.5', await sign(good.privateKey))).status, 200, 'replays counted as no failure: the address is not blocked');
});

t.test("a good client's own parallel burst of 100 is never refused", async (t) => {
  const assertions = await Promise.all(Array.from({ length: 100 }, () => sign(good.privateKey)));
  const answers = await Promise.all(assertions.map((assertion) => token('127.0.0.6', assertion)));
  t.equal(count(answers, 200), 100, 'the first ten in flight hold the others back until one verifies, then all go');
});

t.test('a known-good address is not held back, and its failures still count and block', async (t) => {
  t.equal((await token('127.0.0.7', await sign(good.privateKey))).status, 200);
  const assertions = await Promise.all(Array.from({ length: 100 }, () => sign(forger.privateKey)));
  const answers = await Promise.all(assertions.map((assertion) => token('127.0.0.7', assertion)));
  // The price of not holding a good client back (docs/security.md, "Throttles"): a stranger
  // sharing its address gets a burst in flight verified, all of it here; the failures still count.
  t.ok(count(answers, 401) >= limit, `${count(answers, 401)} of 100 verified`);
  t.equal(count(answers, 401) + count(answers, 429), 100);
  t.equal((await token('127.0.0.7', await sign(good.privateKey))).status, 429, 'blocked after the burst');
});

t.test('an assertion the gateway answers itself before any worker (no grant_type) gives its place back', async (t) => {
  // Fifteen in a row from a fresh address, over the limit of ten: a place never given back would
  // leave the eleventh waiting for good.
  for (let i = 0; i < 15; i++) {
    const url = new URL(gw.tokenUrl);
    const body = new URLSearchParams({ client_assertion_type: assertionType, client_assertion: await sign(good.privateKey) }).toString();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          localAddress: '127.0.0.8',
          agent: false,
          timeout: 5000,
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`request ${i + 1} got no answer`)));
      req.on('error', reject);
      req.end(body);
    });
    t.equal(status, 400, `request ${i + 1}: invalid_request, answered`);
  }
});
