import { basicAuthorization } from './basic_authorization.js';

/** `POST /connect/token` as `clientId` with Basic and the secret `secret`; the status and the JSON body. */
export async function tokenRequest(url: string, clientId: string, params: Record<string, string>) {
  const res = await fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId) },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
