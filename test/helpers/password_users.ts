import { hashPassword } from '../../core/crypto/password_hash.js';
import { sha256Secret } from './test_gateway.js';

/** Users and clients for password-grant tests; hashes are made once per test file. */
export async function passwordFixtures() {
  const [alice, bob, carol, dave, erin] = await Promise.all([
    hashPassword('alice-pw'),
    hashPassword('bob-pw'),
    hashPassword('pässwörd ✓ 密码'),
    hashPassword('dave-pw'),
    hashPassword('erin-pw'),
  ]);
  const users = [
    { subjectId: 'sub-alice', username: 'alice', passwordHash: alice, claims: { name: 'Alice' } },
    { subjectId: 'sub-bob', username: 'bob', passwordHash: bob, enabled: false },
    { subjectId: 'sub-carol', username: 'carol', passwordHash: carol },
    { subjectId: 'sub-dave-acme', username: 'dave', passwordHash: dave, tenant: 'acme' },
    { subjectId: 'sub-erin-corp', username: 'erin', passwordHash: erin, idp: 'corp' },
  ];
  const clients = [
    {
      clientId: 'ro',
      clientSecrets: [{ value: sha256Secret('secret') }],
      allowedGrantTypes: ['password'],
      allowedScopes: ['openid', 'profile', 'api1'],
    },
    {
      clientId: 'ro2',
      clientSecrets: [{ value: sha256Secret('secret') }],
      allowedGrantTypes: ['password'],
      allowedScopes: ['api1'],
    },
    {
      clientId: 'corp-only',
      clientSecrets: [{ value: sha256Secret('secret') }],
      allowedGrantTypes: ['password'],
      allowedScopes: ['api1'],
      identityProviderRestrictions: ['corp'],
    },
  ];
  return { users, clients };
}

export function addPasswordFixtures(raw: Record<string, unknown>, fixtures: Awaited<ReturnType<typeof passwordFixtures>>): void {
  raw.users = fixtures.users;
  (raw.clients as unknown[]).push(...fixtures.clients);
}

/** A confidential client of the password grant that may refresh (secret `secret`). */
export function offlineUserClient(clientId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    clientId,
    clientSecrets: [{ value: sha256Secret('secret') }],
    allowedGrantTypes: ['password', 'refresh_token'],
    allowedScopes: ['api1', 'api2', 'offline_access'],
    allowOfflineAccess: true,
    ...extra,
  };
}
