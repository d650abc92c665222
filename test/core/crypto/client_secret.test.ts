import t from 'tap';
import { hashClientSecret } from '../../../core/crypto/client_secret.js';

t.test('hashes "secret" to the IdentityServer value', async (t) => {
  t.equal(hashClientSecret('secret'), 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=');
});

t.test('hashes the UTF-8 bytes of a non-ASCII secret', async (t) => {
  // Computed independently: base64(sha256('pässwörd ✓'.encode('utf-8'))) in Python.
  t.equal(hashClientSecret('pässwörd ✓'), '91Q3XMx3UxqLH/ay5CZGoDX+al6IxmoqCEJ2hii8Ovg=');
});
