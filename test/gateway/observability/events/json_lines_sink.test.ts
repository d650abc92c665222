// The JSON-lines sink (gateway/observability/events/json_lines_sink.ts) encodes each line into a 64 KiB buffer
// and writes the buffer when it is full, after 50 ms, or at close: every event comes out as one
// line, in order, whole, whatever its size and characters.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { AuditEvent } from '../../../../gateway/observability/events/audit_event.js';
import { JsonLinesSink } from '../../../../gateway/observability/events/json_lines_sink.js';

function event(i: number, username?: string): AuditEvent {
  return {
    time: '2026-11-25T21:31:20.123Z',
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    name: 'UserLoginSuccess',
    category: 'Authentication',
    outcome: 'success',
    clientId: 'app',
    ...(username === undefined ? {} : { username }),
  };
}

t.test('lines of every size, ASCII or not, come out whole and in order', async (t) => {
  const file = join(t.testdir(), 'events.jsonl');
  const drops: number[] = [];
  const sink = JsonLinesSink.open(
    file,
    (_sink, count) => drops.push(count),
    () => {},
  );
  const sent: AuditEvent[] = [];
  // Enough small lines to fill the buffer several times, one batch per "turn" of ten.
  for (let batch = 0; batch < 300; batch++) {
    const events = Array.from({ length: 10 }, (_, k) => event(batch * 10 + k, k === 3 ? `zoë-名前-🙂-${batch}` : undefined));
    sent.push(...events);
    sink.write(events);
  }
  // A line longer than the buffer (3-byte characters), one just under it, and a lone surrogate.
  const long = [event(9001, '名'.repeat(70_000)), event(9002, 'x'.repeat(64 * 1024 - 300)), event(9003, 'a\ud800b')];
  sent.push(...long);
  sink.write(long);
  sink.write([event(9004)]);
  sent.push(event(9004));
  await sink.close();

  const text = readFileSync(file, 'utf8');
  t.ok(text.endsWith('\n'), 'ends with a newline');
  const lines = text.slice(0, -1).split('\n');
  t.equal(lines.length, sent.length, 'one line per event');
  const parsed = lines.map((line) => JSON.parse(line) as AuditEvent);
  t.same(
    parsed.map((e) => e.id),
    sent.map((e) => e.id),
    'in the order they were written',
  );
  t.same(parsed, sent, 'each event whole');
  t.same(drops, [], 'nothing dropped');
});

t.test('a few events are written within 50 ms, without a close', async (t) => {
  const file = join(t.testdir(), 'events.jsonl');
  const sink = JsonLinesSink.open(
    file,
    () => {},
    () => {},
  );
  t.teardown(() => sink.close());
  sink.write([event(1), event(2)]);
  const deadline = Date.now() + 2000;
  let text = '';
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The sink opens its file asynchronously: on a loaded machine it may not be there yet.
    text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (text.split('\n').length === 3) break;
  }
  t.same(
    text
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as AuditEvent).id),
    [event(1).id, event(2).id],
  );
});
