// The bare hand-off's Piscina worker: worker threads do not inherit the parent's tsx hooks (as
// workers/worker_from_source.mjs), so they are registered here before the task is imported.
import { register } from 'tsx/esm/api';

register();
const { default: emptyBatch } = await import('./handoff_task.ts');
export default emptyBatch;
