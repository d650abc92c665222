/**
 * A feed whose lines carry a header as well as a body (bench/load/load_generator.ts `LoadFeed.header`):
 * both load generators send each line's header with that line's body, in place of the kind's own
 * header, so a load can spread over many clients' `Authorization` headers (the `scale` bench).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { createAutocannon } from '../load/autocannon.js';
import type { LoadGenerator } from '../load/load_generator.js';
import { createWrk, findWrk } from '../load/wrk.js';

const names = ['alpha', 'bravo', 'charlie'];

async function check(t: Test, generator: LoadGenerator): Promise<void> {
  const seen: { authorization: string[]; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const raw: string[] = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        if (req.rawHeaders[i]?.toLowerCase() === 'authorization') raw.push(req.rawHeaders[i + 1] ?? '');
      seen.push({ authorization: raw, body });
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"access_token":"x"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const dir = mkdtempSync(path.join(tmpdir(), 'header-feed-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const feed = path.join(dir, 'feed.txt');
  writeFileSync(feed, `${names.map((name) => `Basic ${name}\tclient=${name}`).join('\n')}\n`);
  const result = await generator.start({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    kinds: [
      {
        name: 'fed',
        weight: 1,
        request: {
          method: 'POST',
          path: '/token',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: 'Basic fixed' },
        },
        expect: { status: 200, bodyPrefix: '{"access_token":"' },
        feed: { file: feed, count: names.length, mode: 'cycle', start: 0, header: 'Authorization' },
      },
    ],
    connections: 2,
    durationS: 1,
    workDir: dir,
  }).done;
  t.ok(result.requests > 10, `answered (${result.requests})`);
  t.equal(result.unexpected + result.non2xx, 0, 'every answer as expected');
  t.ok(seen.length >= result.requests, 'the server saw every request');
  t.ok(
    seen.every((request) => request.authorization.length === 1),
    "one Authorization header each: the kind's own is replaced",
  );
  t.ok(
    seen.every((request) => request.authorization[0] === `Basic ${request.body.slice('client='.length)}`),
    "each line's header with its own body",
  );
  t.same(new Set(seen.map((request) => request.authorization[0])), new Set(names.map((name) => `Basic ${name}`)), 'every line is used');
}

t.test('wrk', { skip: findWrk() === null ? 'wrk is not installed' : false }, async (t) => {
  await check(t, createWrk(findWrk() as string, 1));
});

t.test('autocannon', async (t) => {
  await check(t, createAutocannon());
});
