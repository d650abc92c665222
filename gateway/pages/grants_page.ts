import type { TemplatedApp } from 'uWebSockets.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { isStoreUnavailable, type Store } from '../../core/store/store.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import type { TesseraConfig } from '../config/schema.js';
import { endpointPaths } from '../endpoints/endpoint_paths.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { createPageRoute, errorPage, type PageRequest } from './page_form.js';
import { ScopeDescriptions } from './page_views.js';
import type { PageSecrets, Session } from './session.js';
import { renderPage } from './templates.js';
import { listUserGrants, revokeUserGrant } from './user_grants.js';
import type { ClientFinder } from '../client_registry/client_directory.js';

export const grantsPath = endpointPaths.grants;

export interface GrantsPageDeps {
  readonly config: Pick<TesseraConfig, 'identityResources' | 'apiScopes'>;
  /** The config file's clients, then the store's (for their names). */
  readonly clients: ClientFinder;
  readonly secrets: PageSecrets;
  readonly store: Store;
  /** A revocation is an audit event (`GrantsRevoked`, docs/operations.md "Events"). */
  readonly events: AuditEvents;
  readonly now?: () => number;
}

/**
 * The signed-in user's grants (IdentityServer's grants page): the applications they gave access
 * to, through a remembered consent or a grant that can still refresh, each with a button that
 * revokes it: the consent, and every refresh token (and access token) of the user's grants to that
 * application (gateway/pages/user_grants.ts). The form is CSRF-bound to the browser and session
 * like the other pages' (docs/security.md).
 */
export function registerGrantsPage(app: TemplatedApp, deps: GrantsPageDeps): void {
  const now = deps.now ?? Date.now;
  const descriptions = new ScopeDescriptions(deps.config, 'application');
  app.any(
    grantsPath,
    createPageRoute(['get', 'post'], (page) => {
      const session = deps.secrets.readSession(page.cookies);
      if (session === undefined) {
        page.exchange.sendPage(
          200,
          renderPage('done', 'Application access', { message: 'You are not signed in. Sign in through an application first.' }),
        );
        return;
      }
      if (page.method === 'get') {
        guarded(page, () => showGrants(deps, descriptions, page, session));
        return;
      }
      const clientId = page.form.client_id;
      if (!deps.secrets.checkCsrf(page, page.form.csrf_token) || clientId === undefined) {
        errorPage(page.exchange, 400, 'The form has expired. Open the page again.');
        return;
      }
      guarded(page, async () => {
        const revoked = await revokeUserGrant(deps.store, session.sub, clientId, now());
        if (revoked.consent || revoked.families > 0) {
          deps.events.emit({
            name: 'GrantsRevoked',
            outcome: 'success',
            clientId,
            subject: session.sub,
            remoteAddress: page.remoteAddress,
            details: { consent: revoked.consent, families: revoked.families },
          });
        }
        const name = nameOf(await deps.clients.find(clientId), clientId);
        await showGrants(deps, descriptions, page, session, `${name} no longer has access.`);
      });
    }),
  );
}

async function showGrants(
  deps: GrantsPageDeps,
  descriptions: ScopeDescriptions,
  page: PageRequest,
  session: Session,
  message?: string,
): Promise<void> {
  const grants = await listUserGrants(deps.store, session.sub);
  // Store-kept clients' names: one lookup each, shared and cached by the registry.
  const clients = await Promise.all(grants.map((grant) => deps.clients.find(grant.clientId)));
  const csrf = deps.secrets.csrfToken(page.cookies, session);
  page.exchange.sendPage(
    200,
    renderPage('grants', 'Application access', {
      action: grantsPath,
      csrfToken: csrf.token,
      userName: session.displayName,
      message,
      grants: grants.map((grant, i) => ({
        clientId: grant.clientId,
        clientName: nameOf(clients[i], grant.clientId),
        scopes: grant.consent === undefined ? [] : descriptions.of(grant.consent.scopes),
        remembered: grant.consent !== undefined,
        until: grant.consent?.expiresAt == null ? undefined : new Date(grant.consent.expiresAt).toISOString().slice(0, 10),
        refreshes: grant.families > 0,
      })),
    }),
    csrf.cookie === undefined ? {} : { cookies: [csrf.cookie] },
  );
}

function nameOf(client: RegisteredClient | undefined, clientId: string): string {
  return client?.config.clientName ?? clientId;
}

function guarded(page: PageRequest, run: () => Promise<void>): void {
  run().catch((err: unknown) =>
    isStoreUnavailable(err)
      ? errorPage(page.exchange, 503, 'The service is temporarily unavailable. Try again in a moment.')
      : errorPage(page.exchange, 500, OAuthErrors.serverError.description),
  );
}
