/**
 * The shape of a grant module's default export: a non-empty `grantType` and a `handle` function
 * (the full contract is `GrantHandler`, workers/grants/grant_handler.ts). The gateway checks
 * grant modules against it before the workers load them (to learn their grant types), and each
 * worker again before its registry takes one (workers/grants/registry.ts).
 */
export interface GrantModuleExport {
  readonly grantType: string;
  readonly handle: (...args: never[]) => unknown;
}

/** Whether a grant module's default export is a grant handler. */
export function isGrantModuleExport(value: unknown): value is GrantModuleExport {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as GrantModuleExport).grantType === 'string' &&
    (value as GrantModuleExport).grantType.length > 0 &&
    typeof (value as GrantModuleExport).handle === 'function'
  );
}
