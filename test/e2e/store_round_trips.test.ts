// Issue 33: a steady-state redemption is one store round trip on Redis. A real gateway on a
// private redis-server; a second connection in MONITOR mode records every command Redis receives
// while one request is answered (docs/storage.md, "One round trip per redemption").
import t from 'tap';
import { Redis } from 'ioredis';
import { startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { AuthorizeFlow, codeFlowClient, pkcePair } from '../helpers/authorize_flow.js';
import { decideDeviceCode } from '../helpers/device_approval.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const fixtures = await passwordFixtures();
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = { type: 'redis', url: redis.url, keyPrefix: `rt${process.pid}:` };
    (raw.clients as unknown[]).push(codeFlowClient('web'), {
      clientId: 'tv',
      requireClientSecret: false,
      allowedGrantTypes: [deviceGrant, 'refresh_token'],
      allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
      allowOfflineAccess: true,
      pollingInterval: 1,
    });
  },
});

const admin = new Redis(redis.url);
const monitor = await admin.monitor();
t.teardown(() => {
  monitor.disconnect();
  admin.disconnect();
});
let recording: { source: string; command: string }[] | undefined;
monitor.on('monitor', (_time: string, args: string[], source: string) => {
  // What a script calls is listed too, from `lua`: part of its one round trip. Each connection
  // reads Redis's clock once a second (docs/storage.md, "Late rotations"): not the request's.
  const command = (args[0] ?? '').toUpperCase();
  if (recording === undefined || source.includes('lua') || command === 'TIME') return;
  recording.push({ source, command });
});

/**
 * The commands Redis received while `request` ran from the connection that sent the grant's
 * store calls (the worker's: the one that sent a script), and from any other connection.
 */
async function commandsOf<T>(request: () => Promise<T>): Promise<{ result: T; commands: string[]; others: string[] }> {
  // MONITOR lines arrive after the command ran: a moment of quiet on each side.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const seen: { source: string; command: string }[] = [];
  recording = seen;
  const result = await request();
  await new Promise((resolve) => setTimeout(resolve, 200));
  recording = undefined;
  const worker = seen.find((c) => c.command === 'EVALSHA' || c.command === 'EVAL')?.source;
  return {
    result,
    commands: seen.filter((c) => c.source === worker).map((c) => c.command),
    others: seen.filter((c) => c.source !== worker).map((c) => c.command),
  };
}

const flow = new AuthorizeFlow(gw);

/** A code redeemed for tokens, for `web`. */
async function redeemCode(): Promise<{ result: { status: number; body: string }; commands: string[]; others: string[] }> {
  const { verifier, challenge } = pkcePair();
  const code = (await flow.code(flow.params('web', challenge))).get('code') as string;
  return commandsOf(() =>
    flow.token(
      { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:5002/callback', code_verifier: verifier },
      {
        clientId: 'web',
        secret: 'secret',
      },
    ),
  );
}

t.test('a code redemption with a refresh token, then a refresh, are one EVALSHA each', async (t) => {
  // The first call of each script on a connection is an EVAL (ioredis loads it): not steady state.
  const warm = await redeemCode();
  const warmToken = (JSON.parse(warm.result.body) as { refresh_token: string }).refresh_token;
  await flow.token({ grant_type: 'refresh_token', refresh_token: warmToken }, { clientId: 'web', secret: 'secret' });

  const redeemed = await redeemCode();
  t.equal(redeemed.result.status, 200);
  t.same(redeemed.commands, ['EVALSHA'], 'code redemption');

  let refreshToken = (JSON.parse(redeemed.result.body) as { refresh_token: string }).refresh_token;
  for (let i = 0; i < 2; i++) {
    const refreshed = await commandsOf(() =>
      flow.token({ grant_type: 'refresh_token', refresh_token: refreshToken }, { clientId: 'web', secret: 'secret' }),
    );
    t.equal(refreshed.result.status, 200);
    t.same(refreshed.commands, ['EVALSHA'], `refresh ${i + 1}`);
    if (refreshed.others.length > 0) t.comment(`refresh ${i + 1}, other connections: ${refreshed.others.join(' ')}`);
    refreshToken = (JSON.parse(refreshed.result.body) as { refresh_token: string }).refresh_token;
  }
});

/** A device code the user approved. */
async function approvedDeviceCode(): Promise<string> {
  const res = await fetch(`${gw.url}/connect/deviceauthorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: 'tv', scope: 'openid api1 offline_access' }).toString(),
  });
  const device = (await res.json()) as { device_code: string; user_code: string };
  if ((await decideDeviceCode(gw.url, device.user_code, 'allow')) !== 200) throw new Error('the device code was not approved');
  return device.device_code;
}

async function redeemDeviceCode(deviceCode: string) {
  return commandsOf(async () => {
    const answer = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: deviceGrant, client_id: 'tv', device_code: deviceCode }).toString(),
    });
    return { status: answer.status, body: await answer.text() };
  });
}

t.test('an approved device code redemption is one EVALSHA', async (t) => {
  await redeemDeviceCode(await approvedDeviceCode());
  const redeemed = await redeemDeviceCode(await approvedDeviceCode());
  t.equal(redeemed.result.status, 200, redeemed.result.body);
  t.same(redeemed.commands, ['EVALSHA'], 'device code redemption');
});
