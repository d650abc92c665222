// No lockout by strangers, no enumeration, no burst past the limit (docs/security.md): failed
// client authentications are counted per client id and source address, over real HTTP from
// several loopback addresses (node:http can choose its source address; fetch cannot).
import t from 'tap';
import { request } from 'node:http';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const gw = await startTestGateway(t, {
  patch: (raw) => {
    raw.throttling = { clientAuthentication: { maxFailures: 5, windowSeconds: 60 } };
  },
});

function token(from: string, clientId: string, secret: string): Promise<{ status: number; body: string }> {
  const url = new URL(gw.tokenUrl);
  const body = 'grant_type=client_credentials&scope=api1';
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: {
          authorization: basicAuthorization(clientId, secret),
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
        },
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

t.test('a parallel burst of wrong secrets gets at most the limit evaluated', async (t) => {
  const answers = await Promise.all(Array.from({ length: 100 }, () => token('127.0.0.2', 'm2m', 'wrong')));
  const statuses = answers.map((a) => a.status);
  t.equal(statuses.filter((s) => s === 401).length, 5, 'five wrong secrets evaluated and refused');
  t.equal(statuses.filter((s) => s === 429).length, 95, 'every other one refused unevaluated');
  t.equal((await token('127.0.0.2', 'm2m', 'secret')).status, 429, 'the blocked address is refused even with the right secret');
});

t.test("a stranger's failures do not lock the client out", async (t) => {
  t.equal((await token('127.0.0.3', 'm2m', 'secret')).status, 200, 'the client from its own address still gets tokens');
});

t.test('a known and an unknown client id get the same answers', async (t) => {
  const sequence = async (from: string, clientId: string) => {
    const out: string[] = [];
    for (let i = 0; i < 7; i++) {
      const answer = await token(from, clientId, 'wrong');
      out.push(`${answer.status} ${answer.body}`);
    }
    return out;
  };
  const known = await sequence('127.0.0.4', 'm2m');
  const unknown = await sequence('127.0.0.5', 'no-such-client');
  t.same(unknown, known, 'statuses and bodies, failure by failure');
  t.match(known[4], /^401 /);
  t.match(known[5], /^429 /);
});
