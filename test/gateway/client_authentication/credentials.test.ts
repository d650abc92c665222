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
});

t.test('returns null for malformed Basic credentials', async (t) => {
  t.equal(decodeBasicAuthorization('Basic !!!'), null, 'not base64');
  t.equal(decodeBasicAuthorization('Basic YWJj'), null, 'no colon');
  t.equal(decodeBasicAuthorization(basicCredentials(':secret')), null, 'empty id');
  t.equal(decodeBasicAuthorization(basicCredentials('id%zz:secret')), null, 'bad escape');
  t.equal(decodeBasicAuthorization(`Basic ${Buffer.from([0x61, 0xff, 0x3a, 0x62]).toString('base64')}`), null, 'not UTF-8');
});
