// Worker entry used only when Tessera runs from its TypeScript sources (tests, `tsx`):
// worker threads do not inherit the parent's tsx ESM hooks on Node 20, so register them here.
import { register } from 'tsx/esm/api';

register();
globalThis[Symbol.for('tessera.tsx-registered')] = true;
const { default: runTokenBatch } = await import('./worker.ts');
export default runTokenBatch;
