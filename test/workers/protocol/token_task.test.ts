import t from 'tap';
import { packMessage, unpackMessage, type TaskItem } from '../../../workers/protocol/token_task.js';

t.test('packs each message into a buffer of its own, safe to transfer', async (t) => {
  const a = packMessage([{ kind: 'token', grantType: 'client_credentials', clientId: 'm2m', params: { scope: 'api1' } }]);
  const b = packMessage([{ kind: 'login', clientId: 'ro', params: { username: 'alice' } }]);
  t.not(a.buffer, b.buffer, 'no shared backing store');
  t.equal(a.byteLength, a.buffer.byteLength, 'the view covers its whole buffer');
  t.equal(a.byteOffset, 0);
});

t.test('a transferred message leaves later packing intact', async (t) => {
  const { port1, port2 } = new MessageChannel();
  const first = packMessage({ n: 1 });
  port1.postMessage(first, [first.buffer as ArrayBuffer]);
  t.equal(first.byteLength, 0, 'the transferred one is detached');
  const second = packMessage({ n: 2, text: 'x'.repeat(100) });
  t.same(unpackMessage(second), { n: 2, text: 'x'.repeat(100) });
  const received = await new Promise<Uint8Array>((resolve) => port2.once('message', resolve));
  t.same(unpackMessage(received), { n: 1 });
  port1.close();
});

t.test('a batch of task items comes back as it was sent, one kind per endpoint', async (t) => {
  const params = Object.assign(Object.create(null) as Record<string, string>, { token: 'abc', token_type_hint: 'refresh_token' });
  const batch: TaskItem[] = [
    { kind: 'token', grantType: 'refresh_token', clientId: 'web', params: { refresh_token: 'r' } },
    { kind: 'introspection', caller: 'resource', callerId: 'urn:api1', params },
    { kind: 'revocation', clientId: 'web', params: { token: 't' } },
    { kind: 'login', clientId: 'web', params: { username: 'alice', password: 'pw', scope: 'openid' } },
  ];
  t.same(unpackMessage<TaskItem[]>(packMessage(batch)), batch);
});
