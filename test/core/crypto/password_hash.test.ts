import t from 'tap';
import { hashPassword, hashPasswordScrypt, isPasswordHash, verifyPassword } from '../../../core/crypto/password_hash.js';

// RFC 7914 §12: scrypt("password", "NaCl", N=1024, r=8, p=16, dkLen=64), as a PHC string.
const rfc7914Vector =
  '$scrypt$ln=10,r=8,p=16$TmFDbA$/bq+HJ00cgB4VucZDQHp/nxq18vII3gw53N2Y0s3MWIurzDZLiKjiG/xCSedmDDaxyevuUqD7m2DYMvfoswGQA';

t.test('hashes to an argon2id PHC string at the OWASP minimum (m=19456, t=2, p=1) with a 16-byte salt', async (t) => {
  const phc = await hashPassword('alice');
  const match = /^\$argon2id\$v=19\$m=19456,t=2,p=1\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(phc);
  t.ok(match, phc);
  t.equal(Buffer.from(match![1]!, 'base64').length, 16);
  t.equal(Buffer.from(match![2]!, 'base64').length, 32);
});

t.test('still hashes scrypt on request: ln=15, r=8, p=1, a 16-byte salt and a 32-byte key', async (t) => {
  const phc = await hashPasswordScrypt('alice');
  const match = /^\$scrypt\$ln=15,r=8,p=1\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(phc);
  t.ok(match, phc);
  t.equal(Buffer.from(match![1]!, 'base64').length, 16);
  t.equal(Buffer.from(match![2]!, 'base64').length, 32);
  t.notOk(match![1]!.includes('=') || match![2]!.includes('='), 'Base64 without padding');
});

t.test('verifies the known RFC 7914 vector, reading the parameters from the string', async (t) => {
  t.equal(await verifyPassword('password', rfc7914Vector), true);
  t.equal(await verifyPassword('Password', rfc7914Vector), false);
});

t.test('verifies the password it hashed', async (t) => {
  t.equal(await verifyPassword('alice', await hashPassword('alice')), true);
  t.equal(await verifyPassword('alice', await hashPasswordScrypt('alice')), true);
});

t.test('rejects a wrong password', async (t) => {
  const phc = await hashPassword('alice');
  t.equal(await verifyPassword('alicf', phc), false);
  t.equal(await verifyPassword('', phc), false);
});

t.test('handles a non-ASCII password', async (t) => {
  const phc = await hashPassword('pässwörd ✓ 密码 🔑');
  t.equal(await verifyPassword('pässwörd ✓ 密码 🔑', phc), true);
  t.equal(await verifyPassword('passwörd ✓ 密码 🔑', phc), false);
});

t.test('treats the composed and decomposed forms of a password as the same (NFC)', async (t) => {
  const phc = await hashPassword('caf\u00e9');
  t.equal(await verifyPassword('cafe\u0301', phc), true);
});

t.test('gives every hash its own salt', async (t) => {
  const [first, second] = await Promise.all([hashPassword('alice'), hashPassword('alice')]);
  t.not(first, second);
  t.not(first.split('$').at(-2), second.split('$').at(-2));
});

t.test('returns false for malformed argon2id strings instead of throwing', async (t) => {
  const valid = await hashPassword('alice');
  const malformed = [
    valid.replace('m=19456', 'm=99999999'),
    valid.replace('v=19', 'v=16'),
    valid.slice(0, -10),
    `${valid}$`,
    valid.replace('$argon2id$', '$argon2i$'),
  ];
  for (const phc of malformed) {
    t.equal(await verifyPassword('alice', phc), false, phc);
    t.equal(isPasswordHash(phc), false, phc);
  }
});

t.test('returns false for malformed PHC strings instead of throwing', async (t) => {
  const valid = await hashPasswordScrypt('alice');
  const [, , params, salt, hash] = valid.split('$');
  const malformed = [
    '',
    'alice',
    '$scrypt$',
    `$argon2id$${params}$${salt}$${hash}`,
    `$scrypt$ln=15,r=8$${salt}$${hash}`,
    `$scrypt$${params}$${salt}`,
    `$scrypt$${params}$${salt}$${hash}=`,
    `$scrypt$${params}$${salt}$${hash}$`,
    `$scrypt$${params}$${salt}!$${hash}`,
    `$scrypt$ln=31,r=8,p=1$${salt}$${hash}`, // would need terabytes
    `$scrypt$ln=15,r=99,p=1$${salt}$${hash}`,
    `$scrypt$ln=0,r=8,p=1$${salt}$${hash}`,
    `$scrypt$${params}$QQ$${hash}`, // 1-byte salt
    `$scrypt$${params}$${salt}$QUFB`, // 3-byte key
    `$scrypt$${params}$${salt}$${hash}AA`, // 45 Base64 characters cannot be whole bytes
  ];
  for (const phc of malformed) {
    t.equal(await verifyPassword('alice', phc), false, JSON.stringify(phc));
    t.equal(isPasswordHash(phc), false, JSON.stringify(phc));
  }
  t.equal(await verifyPassword('alice', undefined as unknown as string), false, 'not even a string');
});

t.test('recognises a hash it made', async (t) => {
  t.equal(isPasswordHash(await hashPassword('alice')), true);
  t.equal(isPasswordHash(rfc7914Vector), true);
});
