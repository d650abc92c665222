import { register } from 'tsx/esm/api';

const registered = Symbol.for('tessera.tsx-registered');

/**
 * Lets this thread import `.ts` validator modules with no build step (validators/README.md). Hooks are per
 * thread on Node 20, so each worker registers its own; registering twice is avoided.
 *
 * Without the tsconfig: its `paths` map `tessera/validator` to the TypeScript sources, which
 * would give a validator a second copy of the validator API beside the compiled one the gateway
 * runs (two `GrantValidationResult` classes: every result refused as not built by it). Without
 * them, `tessera/validator` resolves through package.json `exports` to the compiled entry, the
 * same module the worker uses. When Tessera itself runs from its sources, the sources' own
 * registration (workers/worker_from_source.mjs) stands and this does nothing.
 */
export function ensureTypeScriptLoader(): void {
  const state = globalThis as { [registered]?: boolean };
  if (state[registered] === true) return;
  register({ tsconfig: false });
  state[registered] = true;
}

export function isTypeScriptModule(file: string): boolean {
  return /\.(c|m)?ts(\?.*)?$/.test(file) && !/\.d\.(c|m)?ts$/.test(file);
}
