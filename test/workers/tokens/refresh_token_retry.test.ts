import { createCipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import t from 'tap';
import { newFamilyId, newRefreshHandle, parseRefreshHandle } from '../../../core/records/refresh_token_handle.js';
import { packRecordText } from '../../../core/store/record_codec.js';
import { openRetryRecord, retriableSuccessor, type RetryRecord } from '../../../workers/tokens/refresh_token_retry.js';

// A version 1 record, sealed with node:crypto's hkdfSync: what a rotation of an earlier version
// leaves in the store for the grace window during a rolling upgrade.
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

t.test("a version 1 record still opens: its key is RFC 5869 HKDF-SHA-256's, for its handle and client only", async (t) => {
  const family = newFamilyId();
  const retired = newRefreshHandle(family);
  const successor = newRefreshHandle(family);
  const record = sealedWithHkdfSync(retired.handle, successor.handle, 'c1');
  t.equal(openRetryRecord(retired, record, 'c1'), successor.handle);
  t.equal(openRetryRecord(retired, record, 'c2'), undefined, 'not for another client');
  t.equal(openRetryRecord(newRefreshHandle(family), record, 'c1'), undefined, 'not with another handle');
});

// SP 800-56C Rev. 2 §4.1 written out byte by byte, apart from the code under test.
function expectedSecret(retiredHandle: string, nonce: Uint8Array, clientId: string): Buffer {
  return createHash('sha256')
    .update(Buffer.of(0, 0, 0, 1))
    .update(Buffer.from(retiredHandle, 'ascii'))
    .update(Buffer.from('tessera refresh-token retry v2', 'ascii'))
    .update(Buffer.from(Buffer.from(nonce).toString('base64url'), 'ascii'))
    .update(Buffer.from(clientId, 'utf8'))
    .digest();
}

t.test("a rotation's successor is derived: one SHA-256 block over the old handle, the nonce and the client", async (t) => {
  const family = newFamilyId();
  const retired = newRefreshHandle(family);
  const { successor, retry } = retriableSuccessor(retired, 'clïent', 5000);
  t.equal(retry.value.v, 2);
  t.equal(retry.value.n.length, 16, 'a 128-bit nonce');
  t.equal(retry.ttlMs, 5000, 'kept for the grace window');
  t.same(retry.key, { kind: 'retry', id: retired.key.id, family }, 'beside the old token, under its store id');
  const bytes = Buffer.from(successor.handle, 'base64url');
  t.equal(bytes.subarray(0, 16).toString('base64url'), family, 'the family leads the handle');
  t.same(bytes.subarray(16), expectedSecret(retired.handle, retry.value.n, 'clïent'), 'the secret is the KDF block');
  t.same(parseRefreshHandle(successor.handle), successor, 'a handle like any other, with its store key');
});

t.test('the record leads to the successor with the old handle and its client only, and holds nothing of it', async (t) => {
  const family = newFamilyId();
  const retired = newRefreshHandle(family);
  const { successor, retry } = retriableSuccessor(retired, 'c1', 5000);
  t.equal(openRetryRecord(retired, retry.value, 'c1'), successor.handle);
  const otherClient = openRetryRecord(retired, retry.value, 'c2');
  t.not(otherClient, successor.handle, 'another client derives another handle');
  t.equal(parseRefreshHandle(otherClient ?? '')?.family, family, '(in the family, where the store finds no record for it)');
  t.not(openRetryRecord(newRefreshHandle(family), retry.value, 'c1'), successor.handle, 'so does another handle');
  const stored = Buffer.from(packRecordText(retry.value), 'latin1');
  t.equal(stored.indexOf(Buffer.from(successor.handle, 'base64url').subarray(16)), -1, "the stored bytes hold not the successor's secret");
  t.equal(stored.indexOf(Buffer.from(successor.handle)), -1, 'nor its handle');
});

t.test('a record that is neither version, or a nonce of the wrong size, leads nowhere', async (t) => {
  const retired = newRefreshHandle(newFamilyId());
  t.equal(openRetryRecord(retired, { v: 2, n: new Uint8Array(15) }, 'c1'), undefined);
  t.equal(openRetryRecord(retired, { v: 3 } as unknown as RetryRecord, 'c1'), undefined);
  t.equal(openRetryRecord(retired, { v: 1, sealed: new Uint8Array(20) }, 'c1'), undefined);
});

t.test('every rotation draws its own nonce, and so its own successor', async (t) => {
  const retired = newRefreshHandle(newFamilyId());
  const rotations = Array.from({ length: 1000 }, () => retriableSuccessor(retired, 'c1', 5000));
  t.equal(new Set(rotations.map((r) => Buffer.from(r.retry.value.n).toString('hex'))).size, 1000);
  t.equal(new Set(rotations.map((r) => r.successor.handle)).size, 1000);
});
