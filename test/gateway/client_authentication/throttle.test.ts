// The client-authentication throttle counts per client id and source address (docs/security.md).
import t from 'tap';
import { pino } from 'pino';
import { ClientAuthThrottle, type PendingAttempt } from '../../../core/throttles.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import type { Store } from '../../../core/store/store.js';

const limits = { maxFailures: 3, windowSeconds: 60 };
const silent = pino({ level: 'silent' });
const attacker = { remoteAddress: () => '203.0.113.9' };
const owner = { remoteAddress: () => '198.51.100.7' };

/** Lets the background store calls of the throttle settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup(store: Store = new MemoryStore()) {
  let now = Date.parse('2026-06-01T00:00:00Z');
  const clock = { now: () => now, advance: (ms: number) => (now += ms) };
  const throttle = new ClientAuthThrottle(store, limits, silent, clock.now);
  return { throttle, clock };
}

t.test('an address blocked here is refused at once, with a Retry-After that counts down', async (t) => {
  const { throttle, clock } = setup();
  for (let i = 0; i < limits.maxFailures; i++) throttle.recordFailure('m2m', attacker, 'test');
  t.same(throttle.stateOf('m2m', attacker), { blocked: true, retryAfterSeconds: 60 }, 'blocked before the store has answered');
  await settle();
  clock.advance(45_500);
  t.same(throttle.stateOf('m2m', attacker), { blocked: true, retryAfterSeconds: 15 });
  t.same(throttle.stateOf('web', attacker), { blocked: false }, 'other clients are not affected');
  clock.advance(15_000);
  t.same(throttle.stateOf('m2m', attacker), { blocked: false }, 'open again when the window ends');
});

t.test('a stranger cannot lock a client out: the client from its own address is unaffected', async (t) => {
  const { throttle } = setup();
  for (let i = 0; i < 50; i++) throttle.recordFailure('m2m', attacker, 'test');
  await settle();
  t.equal(throttle.stateOf('m2m', attacker).blocked, true, "the stranger's address is blocked");
  t.same(throttle.stateOf('m2m', owner), { blocked: false }, "the client's own address is not");
});

t.test('unknown and known client ids are answered alike', async (t) => {
  const { throttle } = setup();
  for (let i = 0; i < limits.maxFailures; i++) {
    throttle.recordFailure('m2m', attacker, 'test');
    throttle.recordFailure('no-such-client', attacker, 'test');
  }
  t.same(throttle.stateOf('no-such-client', attacker), throttle.stateOf('m2m', attacker));
  t.equal(throttle.stateOf('no-such-client', attacker).blocked, true);
});

t.test('failures counted on another gateway block here once this one sees a failure of the same caller', async (t) => {
  const store = new MemoryStore();
  const here = setup(store);
  const elsewhere = setup(store);
  for (let i = 0; i < limits.maxFailures - 1; i++) elsewhere.throttle.recordFailure('m2m', attacker, 'test');
  await settle();
  t.same(here.throttle.stateOf('m2m', attacker), { blocked: false });
  here.throttle.recordFailure('m2m', attacker, 'test');
  await settle();
  t.equal(here.throttle.stateOf('m2m', attacker).blocked, true, 'the shared count reached the limit');
});

t.test('a caller that never failed costs no store call and no address lookup', async (t) => {
  const calls: string[] = [];
  const spy = new Proxy(new MemoryStore(), {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const { throttle } = setup(spy);
  let lookups = 0;
  const counted = {
    remoteAddress: () => {
      lookups += 1;
      return owner.remoteAddress();
    },
  };
  for (let i = 0; i < 100; i++) t.same(throttle.stateOf('m2m', counted), { blocked: false });
  t.same(throttle.stateOf(undefined, counted), { blocked: false });
  await settle();
  t.same(calls, [], 'the store was never asked');
  t.equal(lookups, 0, 'the address was never read');
});

t.test('a store outage fails open on the shared count; the local count still blocks', async (t) => {
  const down = new Proxy(new MemoryStore(), {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      return typeof value === 'function' ? () => Promise.reject(new Error('store down')) : value;
    },
  });
  const { throttle } = setup(down);
  throttle.recordFailure('m2m', attacker, 'test');
  await settle();
  t.same(throttle.stateOf('m2m', attacker), { blocked: false });
  for (let i = 1; i < limits.maxFailures; i++) throttle.recordFailure('m2m', attacker, 'test');
  await settle();
  t.equal(throttle.stateOf('m2m', attacker).blocked, true);
});

t.test('security events: each failure, the block start and its end, one line each, without a secret', async (t) => {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  let now = Date.parse('2026-06-01T00:00:00Z');
  const throttle = new ClientAuthThrottle(new MemoryStore(), limits, logger, () => now);
  for (let i = 0; i < limits.maxFailures + 2; i++) throttle.recordFailure('m2m', attacker, 'wrong secret');
  await settle();
  const messages = lines.map((l) => l.msg);
  t.equal(messages.filter((m) => m === 'client authentication failed').length, limits.maxFailures + 2, 'one line per failure');
  t.equal(messages.filter((m) => m === 'client authentication blocked').length, 1, 'one line when the block starts');
  t.match(
    lines.find((l) => l.msg === 'client authentication failed'),
    { clientId: 'm2m', address: '203.0.113.9', reason: 'wrong secret' },
  );
  t.match(
    lines.find((l) => l.msg === 'client authentication blocked'),
    { clientId: 'm2m', address: '203.0.113.9', retryAfterSeconds: 60 },
  );
  now += 61_000;
  t.same(throttle.stateOf('m2m', attacker), { blocked: false });
  t.match(lines.at(-1), { msg: 'client authentication block ended', clientId: 'm2m', address: '203.0.113.9' });
  t.notMatch(JSON.stringify(lines), /"(client_?secret|secret|password|authorization)":/i, 'no credential field in any line');
});

t.test('admit: attempts in flight count against the limit; the next ones wait, then go or get 429', async (t) => {
  const { throttle } = setup();
  const outcomes: string[] = [];
  const attempts: PendingAttempt[] = [];
  const at = (i: number) => attempts[i] as PendingAttempt;
  for (let i = 0; i < 6; i++) {
    throttle.admit('pk', attacker, (admission) => {
      if (admission.admitted) attempts.push(admission.attempt);
      outcomes[i] = admission.admitted ? 'admitted' : `429 ${admission.retryAfterSeconds}`;
    });
  }
  t.same(outcomes.filter(Boolean), ['admitted', 'admitted', 'admitted'], 'three (the limit) go on at once; three wait');
  at(0).release();
  t.equal(outcomes[3], 'admitted', 'a released place lets the next one go');
  at(1).failed('bad signature');
  at(1).failed('settled twice: counts once');
  t.equal(outcomes[4], undefined, 'one failure and two in flight fill the limit: still waiting');
  at(2).failed('bad signature');
  t.equal(outcomes[4], undefined);
  at(3).failed('bad signature');
  t.same(outcomes.slice(4), ['429 60', '429 60'], 'three failures block: the waiting ones are refused');
  t.equal(throttle.stateOf('pk', attacker).blocked, true);
  t.same(throttle.stateOf('pk', owner), { blocked: false }, "the client's own address is not");
});

t.test('admit: a verified attempt makes the caller known good, and a failure ends that', async (t) => {
  const { throttle } = setup();
  const attempts: PendingAttempt[] = [];
  const at = (i: number) => attempts[i] as PendingAttempt;
  const admit = () => {
    let admitted = false;
    throttle.admit('pk', owner, (admission) => {
      admitted = admission.admitted;
      if (admission.admitted) attempts.push(admission.attempt);
    });
    return admitted;
  };
  for (let i = 0; i < 3; i++) admit();
  t.equal(admit(), false, 'the fourth waits');
  at(0).passed();
  t.equal(attempts.length, 4, 'the waiting one went on');
  t.ok(Array.from({ length: 20 }, admit).every(Boolean), 'a known-good caller is not held back');
  at(1).failed('bad signature');
  t.equal(admit(), false, 'after a failure, attempts in flight count again');
});

t.test('a known-good caller whose block ended is logged once, and counts afresh', async (t) => {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line).msg as string) });
  let now = Date.parse('2026-06-01T00:00:00Z');
  const throttle = new ClientAuthThrottle(new MemoryStore(), limits, logger, () => now);
  const attempts: PendingAttempt[] = [];
  throttle.admit('pk', owner, (admission) => {
    if (admission.admitted) attempts.push(admission.attempt);
  });
  for (let i = 0; i < limits.maxFailures; i++) throttle.recordFailure('pk', owner, 'test');
  t.equal(throttle.stateOf('pk', owner).blocked, true);
  // An assertion in flight before the block verifies a second later: known good past the window.
  now += 1000;
  (attempts[0] as PendingAttempt).passed();
  now += 59_000;
  for (let i = 0; i < 3; i++) t.same(throttle.stateOf('pk', owner), { blocked: false });
  t.equal(lines.filter((line) => line === 'client authentication block ended').length, 1);
  throttle.recordFailure('pk', owner, 'test');
  t.same(throttle.stateOf('pk', owner), { blocked: false }, 'one failure in the new window does not block');
});
