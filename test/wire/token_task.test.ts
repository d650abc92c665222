import t from 'tap';
import { packMessage, packTaskItems, unpackMessage, unpackTaskItems, type TaskItem } from '../../wire/token_task.js';

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

function form(members: Record<string, string>): Record<string, string> {
  return Object.assign(Object.create(null) as Record<string, string>, members);
}

t.test('a batch of task items comes back as it was sent, one kind per endpoint', async (t) => {
  const batch: TaskItem[] = [
    { kind: 'token', grantType: 'refresh_token', clientId: 'web', params: form({ refresh_token: 'r' }), dpop: 'proof' },
    { kind: 'introspection', caller: 'resource', callerId: 'urn:api1', params: form({ token: 'abc', token_type_hint: 'refresh_token' }) },
    { kind: 'revocation', clientId: 'web', params: form({ token: 't' }) },
    { kind: 'login', clientId: 'web', params: form({ username: 'alice', password: 'pw', scope: 'openid' }), address: '192.0.2.1' },
    {
      kind: 'token',
      grantType: 'client_credentials',
      clientId: 'jwt-client',
      params: form({}),
      clientAssertion: { jwt: 'a.b.c', alg: 'ES256', keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }], jti: 'j1', exp: 1 },
    },
    { kind: 'userinfo', params: form({ access_token: 'at' }), dpop: { proof: 'p', htm: 'GET' } },
  ];
  const back = unpackTaskItems(packTaskItems(batch));
  t.same(back, batch);
  for (const item of back) t.equal(Object.getPrototypeOf(item.params), null, 'params stay a null-prototype record');
});

t.test('form parameters named like object members stay plain parameters', async (t) => {
  const params = form({ ['__proto__']: 'x', constructor: 'y', toString: 'z', grant_type: 'client_credentials' });
  const [item] = unpackTaskItems(packTaskItems([{ kind: 'token', grantType: 'client_credentials', clientId: 'm2m', params }]));
  t.equal(Object.getPrototypeOf(item?.params), null);
  t.same(Object.keys(item?.params ?? {}).sort(), ['__proto__', 'constructor', 'grant_type', 'toString']);
  t.equal(item?.params.__proto__, 'x');
  t.equal(({} as Record<string, unknown>).x, undefined, 'no prototype was touched');
});

t.test('members left undefined are not sent', async (t) => {
  const item: TaskItem = { kind: 'token', grantType: 'password', clientId: 'ro', params: form({ username: 'u' }), address: undefined };
  const [back] = unpackTaskItems(packTaskItems([item]));
  t.notOk(back !== undefined && 'address' in back);
});
