import { builtInGrantTypes, deviceCodeGrantType, type BuiltInGrantType } from '../../core/grant_types.js';
import { clientCredentialsGrant } from './client_credentials.js';
import { refreshTokenGrant } from './refresh_token.js';
import { authorizationCodeGrant } from './authorization_code.js';
import { deviceCodeGrant } from './device_code.js';
import type { GrantHandler } from './grant_handler.js';
import { isGrantModuleExport } from '../../core/grant_module.js';

/** The built-in grants a thread builds itself: the password grant needs the thread's credential check. */
export interface PerThreadGrants {
  readonly password: GrantHandler;
}

/** Handlers keyed by `grant_type`: every built-in first, then extension grants; no name twice. */
export class GrantRegistry {
  private readonly handlers = new Map<string, GrantHandler>();

  constructor(perThread: PerThreadGrants) {
    // Typed by the built-in list: a grant type added there without a handler does not compile.
    const builtIns: Readonly<Record<BuiltInGrantType, GrantHandler>> = {
      authorization_code: authorizationCodeGrant,
      client_credentials: clientCredentialsGrant,
      password: perThread.password,
      refresh_token: refreshTokenGrant,
      [deviceCodeGrantType]: deviceCodeGrant,
    };
    for (const grantType of builtInGrantTypes) {
      const handler = builtIns[grantType];
      if (handler.grantType !== grantType) throw new Error(`the ${grantType} handler says it is "${handler.grantType}"`);
      this.register(handler);
    }
  }

  register(handler: GrantHandler): void {
    if (this.handlers.has(handler.grantType)) {
      throw new Error(`grant type "${handler.grantType}" is already registered`);
    }
    this.handlers.set(handler.grantType, handler);
  }

  get(grantType: string): GrantHandler | undefined {
    return this.handlers.get(grantType);
  }
}

/** Validates what a grant module exports as default before it joins the registry (the shape the gateway checks too). */
export function isGrantHandler(value: unknown): value is GrantHandler {
  return isGrantModuleExport(value);
}
