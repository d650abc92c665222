import { clientCredentialsGrant } from './client_credentials.js';
import { refreshTokenGrant } from './refresh_token.js';
import { authorizationCodeGrant } from './authorization_code.js';
import { deviceCodeGrant, deviceCodeGrantType } from './device_code.js';
import type { GrantHandler } from './grant_handler.js';

/** Built-in grants that need nothing but the services; the others are built per worker. */
export const builtInGrants: readonly GrantHandler[] = [clientCredentialsGrant, authorizationCodeGrant, refreshTokenGrant, deviceCodeGrant];

/** Every built-in grant type served today, in the order discovery lists them. */
export const servedBuiltInGrantTypes: readonly string[] = ['authorization_code', 'client_credentials', 'password', 'refresh_token', deviceCodeGrantType];

/** Handlers keyed by `grant_type`: built-ins first, then extension grants; no name twice. */
export class GrantRegistry {
  private readonly handlers = new Map<string, GrantHandler>();

  constructor(handlers: readonly GrantHandler[] = builtInGrants) {
    for (const handler of handlers) this.register(handler);
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

  names(): string[] {
    return [...this.handlers.keys()];
  }
}

/** Validates what a grant module exports as default before it joins the registry. */
export function isGrantHandler(value: unknown): value is GrantHandler {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as GrantHandler).grantType === 'string' &&
    (value as GrantHandler).grantType.length > 0 &&
    typeof (value as GrantHandler).handle === 'function'
  );
}
