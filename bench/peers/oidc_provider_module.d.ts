// The part of node-oidc-provider 9 the bench peer uses (the package ships no types).
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
  export default Provider;
}
