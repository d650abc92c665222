import t from 'tap';
import { pino } from 'pino';
import { ClientAuthThrottle, FailureThrottle } from '../../../gateway/client_authentication/throttle.js';
import { MemoryStore } from '../../../workers/store/memory_store.js';
import type { Store } from '../../../workers/store/store.js';

const limits = { maxFailures: 3, windowSeconds: 60 };
const known = new Set(['m2m', 'web']);
const silent = pino({ level: 'silent' });

/** Lets the background store calls of the throttle settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup(store: Store = new MemoryStore()) {
  let now = Date.parse('2026-06-01T00:00:00Z');
  const clock = { now: () => now, advance: (ms: number) => (now += ms) };
  const failures = new FailureThrottle(store, 'client', limits, clock.now);
  const throttle = new ClientAuthThrottle(failures, (id) => known.has(id), silent, clock.now, 1000);
  return { throttle, failures, clock };
}

t.test('a client blocked here is refused at once, with a Retry-After that counts down', async (t) => {
  const { throttle, clock } = setup();
  for (let i = 0; i < limits.maxFailures; i++) throttle.recordFailure('m2m');
  await settle();
  t.same(throttle.stateOf('m2m'), { blocked: true, retryAfterSeconds: 60 });
  clock.advance(45_500);
  t.same(throttle.stateOf('m2m'), { blocked: true, retryAfterSeconds: 15 });
  t.same(throttle.stateOf('web'), { blocked: false }, 'other clients are not affected');
  clock.advance(15_000);
  t.same(throttle.stateOf('m2m'), { blocked: false }, 'open again when the window ends');
});

t.test('a block set by another gateway applies here once the cached state is refreshed', async (t) => {
  const store = new MemoryStore();
  const here = setup(store);
  const elsewhere = setup(store);
  t.same(here.throttle.stateOf('m2m'), { blocked: false });
  await settle();
  for (let i = 0; i < limits.maxFailures; i++) await elsewhere.failures.recordFailure('m2m');
  t.same(here.throttle.stateOf('m2m'), { blocked: false }, 'still the cached state within the freshness window');
  here.clock.advance(1000);
  here.throttle.stateOf('m2m');
  await settle();
  t.equal(here.throttle.stateOf('m2m').blocked, true);
});

t.test('unknown client ids are never tracked: they cannot authenticate anyway', async (t) => {
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
  for (let i = 0; i < 10; i++) throttle.recordFailure('nobody');
  t.same(throttle.stateOf('nobody'), { blocked: false });
  t.same(throttle.stateOf(undefined), { blocked: false });
  await settle();
  t.same(calls, [], 'the store was never asked');
});

t.test('a store outage fails open: client authentication keeps working', async (t) => {
  const down = new Proxy(new MemoryStore(), {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      return typeof value === 'function' ? () => Promise.reject(new Error('store down')) : value;
    },
  });
  const { throttle } = setup(down);
  for (let i = 0; i < limits.maxFailures; i++) throttle.recordFailure('m2m');
  t.same(throttle.stateOf('m2m'), { blocked: false });
  await settle();
  t.same(throttle.stateOf('m2m'), { blocked: false });
});
