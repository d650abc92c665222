import { register } from 'tsx/esm/api';

const registered = Symbol.for('tessera.tsx-registered');

/**
 * Lets this thread import `.ts` validator modules with no build step (validators/README.md). Hooks are per
 * thread on Node 20, so each worker registers its own; registering twice is avoided.
 */
export function ensureTypeScriptLoader(): void {
  const state = globalThis as { [registered]?: boolean };
  if (state[registered] === true) return;
  register();
  state[registered] = true;
}

export function isTypeScriptModule(file: string): boolean {
  return /\.(c|m)?ts(\?.*)?$/.test(file) && !/\.d\.(c|m)?ts$/.test(file);
}
