// The client address behind trusted proxies (gateway/http/trusted_proxies.ts, config
// `trustedProxies`): the rules of the walk, then over real HTTP on the /device page's per-address
// throttle, from a trusted and an untrusted loopback peer (node:http can pick its source address).
import t from 'tap';
import { request as httpRequest } from 'node:http';
import { normalizeAddress, parseCidr, TrustedProxies } from '../../../gateway/http/trusted_proxies.js';
import { PageResponse } from '../../helpers/browser_session.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

t.test('the client address', async (t) => {
  const proxies = new TrustedProxies(['10.0.0.0/8', '::1/128']);
  t.test('is the peer when the peer is not a trusted proxy, whatever it forwards', async (t) => {
    t.equal(proxies.clientAddress('192.0.2.7', '198.51.100.1'), '192.0.2.7');
  });
  t.test('is the peer when a trusted proxy forwards nothing', async (t) => {
    t.equal(proxies.clientAddress('10.1.2.3', ''), '10.1.2.3');
  });
  t.test('is the right-most hop that is not a trusted proxy', async (t) => {
    t.equal(proxies.clientAddress('10.1.2.3', '198.51.100.1, 203.0.113.9, 10.9.9.9'), '203.0.113.9', 'a forged left part is skipped');
    t.equal(proxies.clientAddress('::1', '203.0.113.9'), '203.0.113.9', 'a trusted IPv6 peer');
    t.equal(proxies.clientAddress('10.1.2.3', '10.0.0.2, 10.0.0.1'), '10.0.0.2', 'all hops trusted: the left-most');
    t.equal(proxies.clientAddress('10.1.2.3', '203.0.113.9:4711'), '203.0.113.9', 'a port is dropped');
    t.equal(proxies.clientAddress('10.1.2.3', '[2001:db8::17]:4711'), '2001:db8::17');
  });
  t.test('ends at the last trusted hop when a hop is not an address', async (t) => {
    t.equal(proxies.clientAddress('10.1.2.3', '203.0.113.9, unknown'), '10.1.2.3');
    t.equal(proxies.clientAddress('10.1.2.3', 'nonsense, 10.0.0.7'), '10.0.0.7');
  });
  t.test('reads the for= of RFC 7239 Forwarded when configured so', async (t) => {
    const forwarded = new TrustedProxies(['10.0.0.0/8'], 'forwarded');
    t.equal(
      forwarded.clientAddress('10.1.2.3', 'for=198.51.100.1;proto=https, for="[2001:db8:cafe::17]:4711";by=10.0.0.1'),
      '2001:db8:cafe::17',
    );
    t.equal(forwarded.clientAddress('10.1.2.3', 'for=_hidden, for=10.0.0.5'), '10.0.0.5', 'an obfuscated node ends the walk');
    t.equal(forwarded.clientAddress('10.1.2.3', 'proto=https'), '10.1.2.3', 'an element without for=');
  });
  t.test('spells every address one way', async (t) => {
    t.equal(normalizeAddress('0000:0000:0000:0000:0000:0000:0000:0001'), '::1');
    t.equal(normalizeAddress('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1', 'IPv4-mapped');
    t.equal(normalizeAddress('203.0.113.9'), '203.0.113.9');
  });
  t.test('CIDRs: IPv4, IPv6 and bare addresses; anything else is refused', async (t) => {
    t.same(parseCidr('10.0.0.0/8'), { address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    t.same(parseCidr('::1'), { address: '::1', prefix: 128, family: 'ipv6' });
    for (const bad of ['10.0.0.0/33', '10.0.0/8', 'localhost', '::1/129', '10.0.0.0/']) t.equal(parseCidr(bad), undefined, bad);
    t.throws(() => new TrustedProxies(['10.0.0.0/40']), /not a CIDR/);
  });
});

const maxWrongCodes = 4;
const proxyAddress = '127.0.0.3';

const gw = await startTestGateway(t, {
  patch: (raw) => {
    raw.trustedProxies = [`${proxyAddress}/32`];
    raw.throttling = { userCode: { maxFailures: maxWrongCodes, windowSeconds: 60 } };
  },
});

/** One fresh browser (no cookies) that enters `code` on /device from `peer`, sending `forwardedFor`. */
async function enterCode(peer: string, forwardedFor: string, code: string): Promise<PageResponse> {
  const headers = { 'x-forwarded-for': forwardedFor };
  const entry = await send(peer, 'GET', '/device', headers);
  const cookie = (entry.headers.get('set-cookie') ?? '')
    .split(/,(?=\s*[\w.-]+=)/)
    .map((line) => line.split(';')[0]?.trim())
    .join('; ');
  const body = new URLSearchParams({ csrf_token: entry.hidden('csrf_token'), user_code: code }).toString();
  return send(peer, 'POST', '/device', { ...headers, cookie, 'content-type': 'application/x-www-form-urlencoded' }, body);
}

function send(peer: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<PageResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: gw.port, path, method, headers, localAddress: peer, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const received = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          for (const v of Array.isArray(value) ? value : [value ?? '']) received.append(name, v);
        }
        resolve(new PageResponse(res.statusCode ?? 0, received, Buffer.concat(chunks).toString('utf8')));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('forged X-Forwarded-For from an untrusted peer does not change the counted address', async (t) => {
  for (let i = 1; i <= maxWrongCodes; i++) {
    const page = await enterCode('127.0.0.4', `198.51.100.${i}`, 'BBBB-BBBB');
    t.equal(page.status, 400, `wrong code ${i}, "from" 198.51.100.${i}`);
  }
  const next = await enterCode('127.0.0.4', '198.51.100.200', 'BBBB-BBBB');
  t.equal(next.status, 429, 'the one peer is locked out, whatever address it claims');
});

t.test('behind a trusted proxy every forwarded client is counted on its own', async (t) => {
  for (let i = 1; i <= maxWrongCodes + 2; i++) {
    const page = await enterCode(proxyAddress, `203.0.113.${i}`, 'BBBB-BBBB');
    t.equal(page.status, 400, `browser ${i} behind the proxy, one wrong code`);
  }
  const another = await enterCode(proxyAddress, '203.0.113.100', 'BBBB-BBBB');
  t.equal(another.status, 400, 'another browser behind the same proxy is not locked out');

  t.test('and one forwarded client is still locked out after its own wrong codes', async (t) => {
    for (let i = 1; i <= maxWrongCodes; i++) await enterCode(proxyAddress, '198.51.100.66, 203.0.113.50', 'BBBB-BBBB');
    const blocked = await enterCode(proxyAddress, '192.0.2.1, 203.0.113.50', 'BBBB-BBBB');
    t.equal(blocked.status, 429, 'counted under the hop the proxy saw, whatever the client put left of it');
    const neighbour = await enterCode(proxyAddress, '203.0.113.51', 'BBBB-BBBB');
    t.equal(neighbour.status, 400, 'its neighbour is not');
  });
});

t.test('the issuer never comes from a request header', async (t) => {
  const plain = await send(proxyAddress, 'GET', '/.well-known/openid-configuration', {});
  const forged = await send(proxyAddress, 'GET', '/.well-known/openid-configuration', {
    host: 'evil.example',
    'x-forwarded-host': 'evil.example',
    'x-forwarded-proto': 'https',
    forwarded: 'host=evil.example;proto=https',
    'x-forwarded-for': '203.0.113.9',
  });
  t.equal(forged.status, 200);
  t.equal(forged.body, plain.body, 'the same discovery document');
  t.equal((JSON.parse(forged.body) as { issuer: string }).issuer, gw.config.issuer);
  t.notOk(forged.body.includes('evil.example'));
});
