import t from 'tap';
import { maxFormParameters, parseForm } from '../../../gateway/http/form_parser.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

t.test('decodes plus as space and percent escapes as UTF-8', async (t) => {
  const r = parseForm(enc('scope=api1+api2&name=J%C3%BCrgen%20%E2%9C%93&x=a%2Bb%3D'));
  t.same(r, { ok: true, params: { scope: 'api1 api2', name: 'Jürgen ✓', x: 'a+b=' } });
});

t.test('returns a record without a prototype', async (t) => {
  const r = parseForm(enc('__proto__=x&constructor=y'));
  t.equal(r.ok, true);
  if (r.ok) {
    t.equal(Object.getPrototypeOf(r.params), null);
    t.equal(r.params.__proto__, 'x');
    t.equal(r.params.constructor, 'y');
  }
});

t.test('treats a parameter without a value as omitted', async (t) => {
  t.same(parseForm(enc('grant_type=client_credentials&scope=&flag')), { ok: true, params: { grant_type: 'client_credentials' } });
});

t.test('skips empty segments', async (t) => {
  t.same(parseForm(enc('&&a=1&&')), { ok: true, params: { a: '1' } });
  t.same(parseForm(enc('')), { ok: true, params: {} });
});

t.test('rejects a repeated parameter, even when one copy is empty', async (t) => {
  t.same(parseForm(enc('scope=a&scope=b')), { ok: false, reason: 'duplicate' });
  t.same(parseForm(enc('scope=&scope=b')), { ok: false, reason: 'duplicate' });
  t.same(parseForm(enc('sc%6Fpe=a&scope=b')), { ok: false, reason: 'duplicate' }, 'names compare after decoding');
});

t.test('joins a repeated resource parameter with spaces (RFC 8707 §2)', async (t) => {
  t.same(parseForm(enc('resource=urn%3Aa&scope=x&resource=urn:b&resource=')), {
    ok: true,
    params: { resource: 'urn:a urn:b', scope: 'x' },
  });
  t.same(parseForm(enc('resource=urn:a')), { ok: true, params: { resource: 'urn:a' } });
});

t.test('keeps a resource value holding a space one value, with a tab no URI has', async (t) => {
  t.same(parseForm(enc('resource=urn:a+urn:b&resource=urn:c')), { ok: true, params: { resource: 'urn:a\turn:b urn:c' } });
});

t.test('rejects malformed percent escapes', async (t) => {
  for (const body of ['a=%', 'a=%4', 'a=%zz', 'a=100%', '%=1']) {
    t.same(parseForm(enc(body)), { ok: false, reason: 'encoding' }, body);
  }
});

t.test('rejects escaped bytes that are not UTF-8', async (t) => {
  for (const body of ['a=%C3%28', 'a=%FF', 'a=%ED%A0%80', 'a=%C0%AF']) {
    t.same(parseForm(enc(body)), { ok: false, reason: 'encoding' }, body);
  }
});

t.test('rejects raw bytes that are not UTF-8', async (t) => {
  t.same(parseForm(Uint8Array.of(0x61, 0x3d, 0xff)), { ok: false, reason: 'encoding' });
  t.same(parseForm(Uint8Array.of(0x61, 0x3d, 0xc3, 0xbc)), { ok: true, params: { a: 'ü' } }, 'raw UTF-8 is accepted');
});

t.test(`accepts ${maxFormParameters} parameters and refuses one more`, async (t) => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `p${i}=v`).join('&');
  const atCap = parseForm(enc(body(maxFormParameters)));
  t.equal(atCap.ok && Object.keys(atCap.params).length, maxFormParameters);
  t.same(parseForm(enc(body(maxFormParameters + 1))), { ok: false, reason: 'too_many' });
});

t.test('works on a view into a larger buffer', async (t) => {
  const backing = enc('XXXXa=1&b=2YYYY');
  t.same(parseForm(backing.subarray(4, 11)), { ok: true, params: { a: '1', b: '2' } });
});
