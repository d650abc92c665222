import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { AuthorizationErrors, createValidatorErrorEntry, OAuthError, OAuthErrors, type OAuthErrorEntry } from '../../core/oauth_errors.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const catalogueFile = 'core/oauth_errors.ts';
const entries = Object.entries(OAuthErrors) as [string, OAuthErrorEntry][];

// RFC 6749 §5.2, written out again here rather than read from the catalogue: 400, except
// invalid_client (401); server_error and temporarily_unavailable carry the status they name.
function rfcStatus(error: string): number {
  if (error === 'invalid_client') return 401;
  if (error === 'server_error') return 500;
  if (error === 'temporarily_unavailable') return 503;
  return 400;
}

// The deliberate overrides and the only code each may go with.
const overrides: Record<number, string> = { 405: 'invalid_request', 413: 'invalid_request', 429: 'temporarily_unavailable' };

t.test("every entry's status follows RFC 6749 §5.2 or is a deliberate 405, 413 or 429", async (t) => {
  for (const [name, entry] of entries) {
    if (entry.status === rfcStatus(entry.error)) continue;
    t.equal(overrides[entry.status], entry.error, `${name}: ${entry.status} for ${entry.error}`);
  }
  t.equal(OAuthErrors.invalidClient.status, 401);
  t.equal(OAuthErrors.tooManyFailedAttempts.status, 429);
  t.equal(OAuthErrors.bodyTooLarge.status, 413);
});

t.test("every entry's prebuilt body is its code and description, and nothing else", async (t) => {
  for (const [name, entry] of entries) {
    const expected =
      entry.description === undefined ? { error: entry.error } : { error: entry.error, error_description: entry.description };
    t.strictSame(JSON.parse(entry.body), expected, name);
    t.ok(Object.isFrozen(entry), `${name} is frozen`);
  }
  t.equal(
    OAuthErrors.temporarilyUnavailable.body,
    '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable. Retry later."}',
  );
  t.equal(OAuthErrors.invalidGrant.body, '{"error":"invalid_grant"}');
});

t.test('every entry but the bare invalid_grant has a description, and no two entries say the same', async (t) => {
  const seen = new Map<string, string>();
  for (const [name, entry] of [...entries, ...Object.entries(AuthorizationErrors)]) {
    if (entry.description === undefined) {
      t.equal(name, 'invalidGrant');
      continue;
    }
    const key = `${entry.error} ${entry.description}`;
    t.notOk(seen.has(key), `${name} repeats ${seen.get(key) ?? ''}`);
    seen.set(key, name);
  }
});

t.test('an OAuthError serialises its entry; the detail stays out of the body', async (t) => {
  const err = new OAuthError(OAuthErrors.invalidRefreshToken, { detail: 'family revoked at 12:00' });
  t.equal(err.body, OAuthErrors.invalidRefreshToken.body);
  t.equal(err.status, 400);
  t.notMatch(err.body, /family revoked/);
  const extended = new OAuthError(createValidatorErrorEntry('invalid_grant', 'Token expired.'), {
    extra: { error: 'overridden', error_description: 'overridden', hint: 'refresh it' },
  });
  t.strictSame(JSON.parse(extended.body), { error: 'invalid_grant', error_description: 'Token expired.', hint: 'refresh it' });
  const bare = new OAuthError(OAuthErrors.invalidGrant, { extra: { error_description: 'smuggled' } });
  t.strictSame(JSON.parse(bare.body), { error: 'invalid_grant' }, 'extra members never add a description');
});

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const sources = [...sourceFiles('gateway'), ...sourceFiles('core'), ...sourceFiles('wire'), ...sourceFiles('workers')].filter(
  (file) => relative('.', file) !== catalogueFile,
);

/**
 * Calls of `errorBody(` or `new OAuthError(` with a string literal among their own arguments
 * (nested object members, such as a log-only `detail`, do not count).
 */
function literalErrorCalls(text: string): string[] {
  const found: string[] = [];
  const call = /\b(?:errorBody|new OAuthError)\(/g;
  for (let match = call.exec(text); match !== null; match = call.exec(text)) {
    let depth = 0;
    for (let i = match.index + match[0].length; i < text.length; i++) {
      const c = text[i] as string;
      if (c === '(' || c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') depth--;
      else if (c === ')') {
        if (depth === 0) break;
        depth--;
      } else if (depth === 0 && (c === "'" || c === '"' || c === '`')) {
        const lineEnd = text.indexOf('\n', match.index);
        found.push(text.slice(match.index, lineEnd === -1 ? text.length : lineEnd).trim());
        break;
      }
    }
  }
  return found;
}

t.test('an OAuthError is an answer, not a fault: it captures no stack trace, and leaves the limit as it was', async (t) => {
  const limit = Error.stackTraceLimit;
  const err = new OAuthError(OAuthErrors.authorizationPending);
  t.ok(err instanceof Error);
  t.equal(err.stack, `OAuthError: ${OAuthErrors.authorizationPending.description}`, 'the first line only, no frames');
  t.equal(Error.stackTraceLimit, limit);
  t.match(new Error('a fault').stack, /\n\s+at /, 'other errors keep their frames');
});

t.test('the literal-call check finds what it should', async (t) => {
  t.same(literalErrorCalls("throw new OAuthError('invalid_grant', 'The code is bad.');"), [
    "new OAuthError('invalid_grant', 'The code is bad.');",
  ]);
  t.same(literalErrorCalls('errorBody(code, `The ${name} endpoint accepts POST only.`)').length, 1);
  t.same(literalErrorCalls("new OAuthError(OAuthErrors.invalidGrant, { detail: 'log only' })"), []);
  t.same(literalErrorCalls('errorBody(err.error, err.description, err.extra)'), []);
});

t.test('no source outside the catalogue builds an error body or OAuthError from a string literal', async (t) => {
  t.ok(sources.length > 50, 'the walk found the sources');
  const offending = sources.flatMap((file) => literalErrorCalls(readFileSync(join(root, file), 'utf8')).map((call) => `${file}: ${call}`));
  t.same(offending, []);
});

t.test('no source outside the catalogue repeats a catalogue description', async (t) => {
  const descriptions = [...entries.map(([, e]) => e.description), ...Object.values(AuthorizationErrors).map((e) => e.description)].filter(
    (d): d is string => d !== undefined,
  );
  const pasted = sources.flatMap((file) => {
    const text = readFileSync(join(root, file), 'utf8');
    return descriptions.filter((d) => text.includes(d)).map((d) => `${file}: ${d}`);
  });
  t.same(pasted, []);
});
