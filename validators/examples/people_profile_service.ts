// A profile service (validators/README.md, "Profile service"): users' claims and whether they are
// still active come from people.json, next to this module, instead of the config's `users`. Copy
// both files into your validatorsDir; an edit to people.json reloads it (it is a declared data
// file). A real one would ask a directory or a database, within `validatorTimeoutMs`.
import { readFileSync } from 'node:fs';
import type { ClaimValue, IsActiveContext, ProfileDataRequestContext, ProfileService, ValidatorServices } from 'tessera/validator';

/** Watched with the module: a change reloads the validators. */
export const dataFiles = ['./people.json'];

interface Person {
  /** `false`: no more tokens, refreshes or UserInfo answers for this user. */
  readonly active: boolean;
  /** Identity claims (ID token, UserInfo), released per granted identity scope. */
  readonly claims: Readonly<Record<string, ClaimValue>>;
  /** Added to access tokens; never a registered claim such as `sub` or `aud`. */
  readonly accessTokenClaims?: Readonly<Record<string, ClaimValue>>;
}

export default class PeopleProfileService implements ProfileService {
  readonly kind = 'profile_service';
  private readonly people: Readonly<Record<string, Person>>;

  constructor(services: ValidatorServices) {
    // Read once per worker thread; the reload builds new instances when the file changes.
    this.people = JSON.parse(readFileSync(new URL('./people.json', import.meta.url), 'utf8')) as Record<string, Person>;
    services.logger.debug({ people: Object.keys(this.people).length }, 'people loaded');
  }

  async getProfileData(context: ProfileDataRequestContext): Promise<Readonly<Record<string, ClaimValue>>> {
    const person = this.people[context.subject];
    if (person === undefined) return {};
    if (context.caller === 'access_token') return person.accessTokenClaims ?? {};
    // Only the claim types the granted identity scopes release are used; asking for no more keeps
    // a slow store's answer small.
    return Object.fromEntries(Object.entries(person.claims).filter(([type]) => context.requestedClaimTypes.includes(type)));
  }

  async isActive(context: IsActiveContext): Promise<boolean> {
    return this.people[context.subject]?.active === true;
  }
}
