// The key set in shared memory (wire/key_set_cell.ts): versions, and a set too large.
import t from 'tap';
import { generateSigningKey } from '../../gateway/keys/key_loader.js';
import { KeySetCell } from '../../wire/key_set_cell.js';

const key = await generateSigningKey('ES256');
const set = { keys: [key], activations: [{ kid: key.kid, activatesAt: 0 }] };

t.test('a reader sees each written set once, with a version that grows', async (t) => {
  const cell = KeySetCell.create();
  t.equal(cell.version, 0);
  t.equal(cell.readIfChanged(0), null, 'nothing written yet');
  cell.write(set);
  // Another view on the same memory, as a worker thread has.
  const reader = new KeySetCell(cell.buffer);
  t.same(reader.readIfChanged(0), { version: 1, set });
  t.equal(reader.readIfChanged(1), null, 'unchanged since');
  cell.write({ keys: [], activations: [] });
  t.same(reader.readIfChanged(1), { version: 2, set: { keys: [], activations: [] } });
});

t.test('a set larger than the cell is refused and the previous set stays', async (t) => {
  const cell = KeySetCell.create(4096);
  cell.write(set);
  const huge = { keys: Array.from({ length: 40 }, () => key), activations: [{ kid: key.kid, activatesAt: 0 }] };
  t.throws(() => cell.write(huge), RangeError);
  t.same(new KeySetCell(cell.buffer).readIfChanged(0), { version: 1, set });
});
