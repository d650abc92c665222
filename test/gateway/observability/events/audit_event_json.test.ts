// The fixed-shape writer of audit event lines (gateway/observability/events/audit_event_json.ts): every line
// parses back to the event it was made from, for awkward text in every member that can come from
// outside Tessera, and has the members JSON.stringify would give it.
import t from 'tap';
import type { AuditEvent } from '../../../../gateway/observability/events/audit_event.js';
import { auditEventJson } from '../../../../gateway/observability/events/audit_event_json.js';

const base: AuditEvent = {
  time: '2026-11-25T21:31:20.123Z',
  id: '0b7d2c4e-6f1a-4c3b-9d8e-2a1f0c9b8e7d',
  name: 'TokenIssuedSuccess',
  category: 'Token',
  outcome: 'success',
};

const awkward: Readonly<Record<string, string>> = {
  empty: '',
  quotes: 'say "hi"',
  backslashes: 'C:\\path\\"x\\',
  'control characters': '\u0000\u0001\b\f\n\r\t\u001f\u007f',
  'a line separator (valid JSON, not JS before ES2019)': 'a\u2028b\u2029c',
  'non-ASCII': 'Zoë 名前 🙂',
  'a lone high surrogate': 'a\ud800b',
  'a lone low surrogate at the end': 'x\udfff',
  'surrogates in the wrong order': '\udc00\ud800',
  'an attempt to close the object': '","admin":true,"x":"',
  'a closing brace and a newline': '}\n{"name":"KeyRotated"}',
};

const textMembers = ['clientId', 'subject', 'grantType', 'jti', 'remoteAddress', 'endpoint', 'username', 'error'] as const;

t.test('each awkward string in each member round-trips through JSON.parse, on one line', async (t) => {
  for (const [what, text] of Object.entries(awkward)) {
    for (const member of textMembers) {
      const event: AuditEvent = { ...base, [member]: text };
      const line = auditEventJson(event);
      t.notOk(line.includes('\n'), `${what} in ${member}: the line holds no newline`);
      t.same(JSON.parse(line), event, `${what} in ${member}`);
      t.equal(line, JSON.stringify(event), `${what} in ${member}: as JSON.stringify writes it`);
    }
  }
});

t.test('a lone surrogate is escaped, so the line is well-formed UTF-8', async (t) => {
  const line = auditEventJson({ ...base, username: 'a\ud800b' });
  t.match(line, /"username":"a\\ud800b"/);
  t.equal(Buffer.from(line, 'utf8').toString('utf8'), line, 'survives encoding to UTF-8 and back');
});

t.test('absent members stay absent; details and process are written', async (t) => {
  t.same(Object.keys(JSON.parse(auditEventJson(base))), ['time', 'id', 'name', 'category', 'outcome']);
  const full: AuditEvent = {
    ...base,
    name: 'RefreshTokenReuseDetected',
    category: 'Grants',
    outcome: 'failure',
    clientId: 'app',
    subject: 'sub-alice',
    grantType: 'refresh_token',
    jti: 'j1',
    remoteAddress: '2001:db8::1',
    endpoint: '/connect/token',
    username: 'alice',
    error: 'invalid_grant',
    details: { item: 'refresh_token', familyRevoked: true, count: 2, added: ['a"b', 'c\u0000'] },
    process: 3,
  };
  t.same(JSON.parse(auditEventJson(full)), full);
  const withUndefined = { ...base, clientId: undefined, subject: undefined } as unknown as AuditEvent;
  t.same(
    Object.keys(JSON.parse(auditEventJson(withUndefined))),
    ['time', 'id', 'name', 'category', 'outcome'],
    'an undefined member is left out',
  );
});
