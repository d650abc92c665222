import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import t from 'tap';
import { newFamilyId, newRefreshHandle } from '../../../workers/tokens/refresh_token_handle.js';
import { openRetryRecord, sealedRetryRecord, type RetryRecord } from '../../../workers/tokens/refresh_token_retry.js';

// A record sealed as the first version did, with node:crypto's hkdfSync: what a rotation made
// before an upgrade left in the store for the grace window.
function sealedWithHkdfSync(retiredHandle: string, successorHandle: string, clientId: string): RetryRecord {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(retiredHandle, 'utf8'), Buffer.alloc(0), Buffer.from('tessera refresh-token retry v1'), 32),
  );
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(clientId, 'utf8'));
  const body = Buffer.concat([cipher.update(successorHandle, 'utf8'), cipher.final()]);
  return { v: 1, sealed: Buffer.concat([iv, body, cipher.getAuthTag()]) };
}

t.test("the key is RFC 5869 HKDF-SHA-256's: a record sealed with hkdfSync opens", async (t) => {
  const family = newFamilyId();
  const retired = newRefreshHandle(family);
  const successor = newRefreshHandle(family);
  t.equal(openRetryRecord(retired, sealedWithHkdfSync(retired.handle, successor.handle, 'c1'), 'c1'), successor.handle);
});

t.test('a record sealed now opens with the old handle and its client only', async (t) => {
  const family = newFamilyId();
  const retired = newRefreshHandle(family);
  const successor = newRefreshHandle(family);
  const { value } = sealedRetryRecord(retired, successor, 'c1', 5000);
  t.equal(openRetryRecord(retired, value, 'c1'), successor.handle);
  t.equal(openRetryRecord(retired, value, 'c2'), undefined, 'not for another client');
  t.equal(openRetryRecord(newRefreshHandle(family), value, 'c1'), undefined, 'not with another handle');
});

t.test('every record gets its own IV', async (t) => {
  const family = newFamilyId();
  const retired = newRefreshHandle(family);
  const successor = newRefreshHandle(family);
  const ivs = new Set(
    Array.from({ length: 1000 }, () =>
      Buffer.from(sealedRetryRecord(retired, successor, 'c1', 5000).value.sealed)
        .subarray(0, 12)
        .toString('hex'),
    ),
  );
  t.equal(ivs.size, 1000);
});
