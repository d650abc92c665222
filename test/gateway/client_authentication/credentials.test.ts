import t from 'tap';
import { decodeBasicAuthorization } from '../../../gateway/client_authentication/credentials.js';
import { basicCredentials } from '../../helpers/basic_authorization.js';

t.test('decodes a plain id and secret', async (t) => {
  t.same(decodeBasicAuthorization(basicCredentials('m2m:secret')), { clientId: 'm2m', clientSecret: 'secret' });
});

t.test('form-decodes both parts (RFC 6749 Appendix B example client)', async (t) => {
  // id "an:identifier", secret "some secure & non-standard secret", each form-urlencoded first.
  const header = basicCredentials(`${encodeURIComponent('an:identifier')}:${'some+secure+%26+non-standard+secret'}`);
  t.same(decodeBasicAuthorization(header), { clientId: 'an:identifier', clientSecret: 'some secure & non-standard secret' });
});

t.test('splits at the first raw colon so secrets may contain colons', async (t) => {
  t.same(decodeBasicAuthorization(basicCredentials('id:se:cret')), { clientId: 'id', clientSecret: 'se:cret' });
});

t.test('accepts the scheme in any case', async (t) => {
  t.same(decodeBasicAuthorization(`bAsIc ${Buffer.from('a:b').toString('base64')}`), { clientId: 'a', clientSecret: 'b' });
});

t.test('returns undefined for other schemes', async (t) => {
  t.equal(decodeBasicAuthorization('Bearer abc'), undefined);
  t.equal(decodeBasicAuthorization('Basi'), undefined);
  t.equal(decodeBasicAuthorization(`Basically ${Buffer.from('a:b').toString('base64')}`), undefined);
});

t.test('takes one or more spaces after the scheme', async (t) => {
  t.same(decodeBasicAuthorization(`Basic   ${Buffer.from('a:b').toString('base64')}`), { clientId: 'a', clientSecret: 'b' });
});

t.test('form-decodes per Appendix B: + is a space, escapes may encode any UTF-8', async (t) => {
  t.same(decodeBasicAuthorization(basicCredentials('caf%C3%A9+client:p%2Bss%3Aword+')), {
    clientId: 'café client',
    clientSecret: 'p+ss:word ',
  });
});

t.test('returns null for malformed Basic credentials', async (t) => {
  t.equal(decodeBasicAuthorization('Basic'), null, 'no credentials');
  t.equal(decodeBasicAuthorization('Basic  '), null, 'only spaces');
  t.equal(decodeBasicAuthorization('Basic !!!'), null, 'not base64');
  t.equal(decodeBasicAuthorization('Basic YWI6Yw'), null, 'base64 without its padding');
  t.equal(decodeBasicAuthorization(basicCredentials('id:se%2')), null, 'truncated escape in the secret');
  t.equal(decodeBasicAuthorization(basicCredentials('id:%C3%28')), null, 'escapes that are not UTF-8');
  t.equal(decodeBasicAuthorization('Basic YWJj'), null, 'no colon');
  t.equal(decodeBasicAuthorization(basicCredentials(':secret')), null, 'empty id');
  t.equal(decodeBasicAuthorization(basicCredentials('id%zz:secret')), null, 'bad escape');
  t.equal(decodeBasicAuthorization(`Basic ${Buffer.from([0x61, 0xff, 0x3a, 0x62]).toString('base64')}`), null, 'not UTF-8');
});
