/** `npm run bench` options (bench/runner/options.ts): the ones a mistake would silently change. */
import t from 'tap';
import type { LoadGenerator } from '../load/load_generator.js';
import { contendersOf } from '../runner/contenders.js';
import { RunContext } from '../runner/context.js';
import { parseOptions, UsageError } from '../runner/options.js';
import type { Progress } from '../runner/progress.js';
import { scenarios } from '../scenarios/index.js';
import type { ActiveScenario } from '../scenarios/scenario.js';

t.test('without --baseline-root there is no baseline', async (t) => {
  const options = parseOptions(['client_credentials', '--quick']);
  t.equal(options.baselineRoot, undefined);
  t.equal(options.baselineLabel, undefined);
  t.same(options.names, ['client_credentials']);
});

t.test('--baseline-root and --baseline-label are kept as given, beside --gateway-root and --label', async (t) => {
  const options = parseOptions([
    'refresh_token',
    '--gateway-root',
    '/tmp/after',
    '--label',
    'the fix',
    '--baseline-root',
    '/tmp/before',
    '--baseline-label',
    'main c47a9da',
    '--no-save',
  ]);
  t.equal(options.gatewayRoot, '/tmp/after');
  t.equal(options.label, 'the fix');
  t.equal(options.baselineRoot, '/tmp/before');
  t.equal(options.baselineLabel, 'main c47a9da');
  t.equal(options.save, false);
  t.same(options.names, ['refresh_token'], 'option values are not taken for scenarios');
  t.equal(parseOptions(['--baseline-root=/tmp/before']).baselineRoot, '/tmp/before', 'the = form');
});

/** The message of the UsageError parseOptions throws (run.ts prints it above the usage). */
function refusal(argv: string[]): string {
  try {
    parseOptions(argv);
    return 'accepted';
  } catch (err) {
    return err instanceof UsageError ? err.message : `not a UsageError: ${String(err)}`;
  }
}

t.test('a baseline option without what it needs is refused', async (t) => {
  t.equal(refusal(['--baseline-root', '']), '--baseline-root needs a directory', 'an empty directory would be the current one');
  t.equal(refusal(['--baseline-root', '  ']), '--baseline-root needs a directory');
  t.equal(refusal(['--baseline-label', 'x']), '--baseline-label needs --baseline-root', 'a label for no baseline');
  t.throws(() => parseOptions(['--baseline-root']), 'a missing value');
});

t.test('--events is none unless asked, and only none, file or redis', async (t) => {
  t.equal(parseOptions(['client_credentials']).events, 'none');
  t.equal(parseOptions(['client_credentials', '--events', 'file']).events, 'file');
  t.equal(parseOptions(['client_credentials', '--events=redis']).events, 'redis');
  t.equal(refusal(['--events', 'stdout']), '--events must be none, file or redis');
  t.equal(
    parseOptions(['client_credentials', '--baseline-root', '/tmp/b']).baselineEvents,
    'none',
    'a baseline runs without events unless asked',
  );
  t.equal(parseOptions(['client_credentials', '--baseline-root', '/tmp/b', '--baseline-events', 'file']).baselineEvents, 'file');
  t.equal(refusal(['--baseline-root', '/tmp/b', '--baseline-events', 'stdout']), '--baseline-events must be none, file or redis');
  t.equal(refusal(['--baseline-events', 'file']), '--baseline-events needs --baseline-root');
});

t.test('--events-beside adds an events-on twin right after the Tessera row of client_credentials, and nowhere else', async (t) => {
  t.equal(parseOptions(['client_credentials']).eventsBeside, 'none');
  t.equal(parseOptions(['--events-beside', 'file']).eventsBeside, 'file');
  t.equal(refusal(['--events-beside', 'stdout']), '--events-beside must be none, file or redis');
  t.equal(
    refusal(['--events-beside', 'file', '--events', 'file']),
    '--events-beside compares events on with events off: it needs --events none',
  );
  const ctx = new RunContext(
    parseOptions(['--events-beside', 'file']),
    {} as LoadGenerator,
    { kind: 'source', note: null },
    {} as Progress,
  );
  t.teardown(() => ctx.close());
  const named = (name: string): ActiveScenario => scenarios.find((s): s is ActiveScenario => s.kind === 'active' && s.name === name)!;
  t.same(
    contendersOf(named('client_credentials'), ctx)
      .filter((c) => c.kind === 'tessera')
      .map((c) => [c.id, c.events, c.eventsOff]),
    [
      ['tessera/memory', null, null],
      ['tessera/memory+events-file', 'file', 'tessera/memory'],
      ['tessera/redis', null, null],
      ['tessera/redis+events-file', 'file', 'tessera/redis'],
    ],
  );
  t.notOk(
    contendersOf(named('refresh_token'), ctx).some((c) => c.events !== null),
    'the bar judges client_credentials only',
  );
});
