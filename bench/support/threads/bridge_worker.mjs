// The bare bridge loop's worker thread: worker threads do not inherit the parent's tsx hooks (as
// workers/worker_from_source.mjs), so they are registered here before the loop is imported.
import { register } from 'tsx/esm/api';

register();
await import('./bridge_loop.ts');
