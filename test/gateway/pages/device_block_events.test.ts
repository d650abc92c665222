// Security events of the device page's user-code throttle (docs/security.md, "Security event
// logs"): one info line when a block starts and one when it ends, with the address, never the
// code typed or the browser's CSRF cookie.
import t from 'tap';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { BrowserSession } from '../../helpers/browser_session.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

t.test('a user-code block logs its start and, when its window ends, its end', async (t) => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const gw = await startTestGateway(t, {
    logger: pino({ level: 'info' }, sink),
    patch: (raw) => {
      raw.throttling = { userCode: { maxFailures: 2, windowSeconds: 2 } };
    },
  });
  const browser = new BrowserSession();
  const enter = async (code: string) => {
    const entry = await browser.get(`${gw.url}/device`);
    return browser.post(`${gw.url}/device`, { csrf_token: entry.hidden('csrf_token'), user_code: code });
  };
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await enter('WXYZ-WXYZ')).status);
  t.same(statuses, [400, 400, 429, 429], 'two wrong codes, then blocked');
  const started = lines.filter((l) => l.msg === 'user code attempts blocked');
  t.same(started.map((l) => l.per).sort(), ['address', 'browser'], 'one start line per throttle that blocked, however many refusals');
  t.match(started[0], { address: '127.0.0.1', retryAfterSeconds: Number });
  t.equal(lines.filter((l) => l.msg === 'user code block ended').length, 0, 'no end line while blocked');

  const deadline = Date.now() + 5000;
  while (lines.filter((l) => l.msg === 'user code block ended').length < 2 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const ended = lines.filter((l) => l.msg === 'user code block ended');
  t.same(ended.map((l) => l.per).sort(), ['address', 'browser'], 'one end line per block, when its window is over');
  t.match(ended[0], { address: '127.0.0.1' });
  t.equal((await enter('WXYZ-WXYZ')).status, 400, 'the block is over: a wrong code is a wrong code again');
  const logged = JSON.stringify(lines);
  t.notMatch(logged, /WXYZ/, 'the typed code is never logged');
  t.notMatch(logged, new RegExp(String(browser.cookie('tessera.csrf'))), 'the CSRF cookie is never logged');
});
