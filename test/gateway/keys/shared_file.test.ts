// A secret file made once (gateway/keys/shared_file.ts): the development key and the memory
// store's page secret. Of callers racing on a missing file one writes it and every caller gets what
// it wrote; a file still being written is waited for; a broken one is an error, not a new secret.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readOrMakeOnce } from '../../../gateway/keys/shared_file.js';

const parse = (text: string): string => {
  const value = text.trim();
  if (value.length < 8) throw new Error('incomplete');
  return value;
};

t.test('twenty callers at once on a missing file: one value for all, the one on disk', async (t) => {
  const file = path.join(t.testdir(), 'nested', 'secret');
  let made = 0;
  const values = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      readOrMakeOnce(
        file,
        async () => {
          made++;
          return { value: `value-${i}-xxxxxxxx`, text: `value-${i}-xxxxxxxx\n` };
        },
        parse,
      ),
    ),
  );
  t.equal(new Set(values).size, 1, 'every caller got the same value');
  t.equal(parse(readFileSync(file, 'utf8')), values[0], 'the one written');
  t.ok(made >= 1);
  const again = await readOrMakeOnce(file, async () => ({ value: 'never', text: 'never-ever\n' }), parse);
  t.equal(again, values[0], 'an existing file is read, not made again');
});

t.test('a file still being written is waited for; one that never completes is an error', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'secret');
  writeFileSync(file, 'par');
  setTimeout(() => writeFileSync(file, 'partial-then-complete\n'), 100);
  t.equal(await readOrMakeOnce(file, async () => ({ value: 'never', text: '' }), parse), 'partial-then-complete');
  const broken = path.join(dir, 'broken');
  writeFileSync(broken, 'x');
  await t.rejects(
    readOrMakeOnce(broken, async () => ({ value: 'never', text: '' }), parse),
    /incomplete/,
  );
});
