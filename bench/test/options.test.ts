/** `npm run bench` options (bench/runner/options.ts): the ones a mistake would silently change. */
import t from 'tap';
import { parseOptions, UsageError } from '../runner/options.js';

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
