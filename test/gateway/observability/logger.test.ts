// logFormat (gateway/observability/logger.ts, docs/operations.md "Logs"): `pretty` turns the main thread's JSON
// lines into readable ones through pino-pretty; `json` (and `auto` without a terminal, as here)
// keeps JSON lines.
import t from 'tap';
import { startSpawnedGateway } from '../../helpers/spawned_gateway.js';

t.test('logFormat pretty: the main thread writes readable lines, not JSON', async (t) => {
  const gw = await startSpawnedGateway(t, {
    validators: [],
    patch: (raw) => {
      raw.logFormat = 'pretty';
    },
  });
  const deadline = Date.now() + 10_000;
  while (!/INFO.*tessera listening/.test(gw.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.match(gw.output(), /INFO.*tessera listening/, 'a readable line with the level and the message');
  t.notOk(
    gw.logLines().some((line) => line.msg === 'tessera listening'),
    'and no JSON line for it',
  );
});

t.test('logFormat auto without a terminal: JSON lines', async (t) => {
  const gw = await startSpawnedGateway(t, { validators: [] });
  const listening = await gw.waitForLog('the start line', (line) => line.msg === 'tessera listening');
  t.equal(listening.level, 30);
});
