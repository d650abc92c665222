/**
 * The admin API's client listing cursor (docs/operations.md, "Admin API"): where the next page
 * starts, opaque to callers. It carries the last `clientId` of the page it ends (pages go by
 * `clientId`, `Store.listFamily`), behind a version tag so that its form can change.
 */
const tag = 'c1:';

export function encodeClientCursor(lastClientId: string): string {
  return Buffer.from(`${tag}${lastClientId}`, 'utf8').toString('base64url');
}

/** The `clientId` the cursor continues after; `undefined` for anything this API did not give. */
export function decodeClientCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(tag) || encodeClientCursor(text.slice(tag.length)) !== cursor) return undefined;
  return text.slice(tag.length);
}
