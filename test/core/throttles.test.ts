// The throttles (core/throttles.ts) share one hash of their subjects: store keys never
// carry a username, client id or address, and they stay the keys earlier versions counted under
// (a rolling upgrade keeps counting in the same windows).
import { createHash } from 'node:crypto';
import t from 'tap';
import { pino } from 'pino';
import type { Store } from '../../core/store/store.js';
import { ClientAuthThrottle, FailureThrottle, IntrospectionThrottle, RequestRate, subjectDigest } from '../../core/throttles.js';

function countingStore(names: string[]): Store {
  return {
    increment: async (name: string) => {
      names.push(name);
      return { count: 1, resetInMs: 60_000 };
    },
  } as unknown as Store;
}

t.test('every throttle keys its counter by the SHA-256 of its subject, base64url', async (t) => {
  const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('base64url');
  t.equal(subjectDigest('alice@example'), sha('alice@example'));
  const names: string[] = [];
  const store = countingStore(names);
  const limits = { maxFailures: 5, windowSeconds: 60 };
  await new FailureThrottle(store, 'pwd-user', limits).attempt('alice');
  await new IntrospectionThrottle(store, limits).recordInactive('urn:api1');
  await new RequestRate(store, 'devauth', { maxRequests: 5, windowSeconds: 60 }).take('tv\u0000192.0.2.1');
  new ClientAuthThrottle(store, limits, pino({ level: 'silent' })).recordFailure('m2m', { remoteAddress: () => '192.0.2.1' }, 'test');
  t.same(names, [
    `pwd-user:${sha('alice')}`,
    `introspect:${sha('urn:api1')}`,
    `devauth:${sha('tv\u0000192.0.2.1')}`,
    `client:${sha('m2m\u0000192.0.2.1')}`,
  ]);
  for (const name of names) t.notMatch(name, /alice|api1|192\.0\.2\.1|m2m/, 'no subject in a store key');
});
