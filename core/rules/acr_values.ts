/** `acr_values` as the password grant and the login pages read it (docs/endpoints.md, "Grants"). */
export interface AcrValues {
  readonly values: readonly string[];
  readonly idp: string | undefined;
  readonly tenant: string | undefined;
}

/**
 * Splits the space-separated `acr_values` (OIDC Core §3.1.2.1) and picks out IdentityServer's
 * `idp:<name>` and `tenant:<name>` entries; the first of each wins, empty names are ignored.
 */
export function parseAcrValues(raw: string | undefined): AcrValues {
  if (raw === undefined) return { values: [], idp: undefined, tenant: undefined };
  const values = raw.split(' ').filter((v) => v.length > 0);
  let idp: string | undefined;
  let tenant: string | undefined;
  for (const value of values) {
    if (idp === undefined && value.startsWith('idp:') && value.length > 4) idp = value.slice(4);
    else if (tenant === undefined && value.startsWith('tenant:') && value.length > 7) tenant = value.slice(7);
  }
  return { values, idp, tenant };
}
