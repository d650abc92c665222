import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { OAuthErrors, type OAuthErrorEntry } from '../workers/protocol/oauth_errors.js';
import type { FormParams } from '../workers/protocol/token_task.js';
import { maxBodyBytes, readBody } from './http/body_reader.js';
import { Exchange } from './http/exchange.js';
import { parseForm, type FormParseFailure } from './http/form_parser.js';

/** A parsed form POST, ready for the endpoint's own steps. */
export interface FormRequest {
  readonly exchange: Exchange;
  readonly params: FormParams;
  /** The Authorization header, copied before the uWS request object died ('' when absent). */
  readonly authorization: string;
}

const parseFailures: Record<FormParseFailure, OAuthErrorEntry> = {
  encoding: OAuthErrors.formNotUtf8,
  duplicate: OAuthErrors.duplicateParameter,
  too_many: OAuthErrors.tooManyParameters,
};

/** `application/x-www-form-urlencoded`, optionally with a UTF-8 charset parameter. */
export function isFormContentType(header: string): boolean {
  const semi = header.indexOf(';');
  const type = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return false;
  if (semi === -1) return true;
  for (const part of header.slice(semi + 1).split(';')) {
    const [name, value] = part.split('=');
    if (name?.trim().toLowerCase() === 'charset' && value?.trim().replaceAll('"', '').toLowerCase() !== 'utf-8') return false;
  }
  return true;
}

/**
 * The steps every OAuth form endpoint starts with (token, introspection, revocation): POST only,
 * form content type, the 64 KiB body cap, strict parsing. Then `onForm` runs, synchronously.
 */
export function createFormEndpoint(
  postOnly: OAuthErrorEntry,
  onForm: (request: FormRequest) => void,
  observe?: (status: number) => void,
): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const exchange = new Exchange(res);
    exchange.observer = observe;
    if (req.getMethod() !== 'post') {
      exchange.sendError(postOnly, { allow: 'POST' });
      return;
    }
    // uWS request objects die with this callback: copy what later steps need now.
    const authorization = req.getHeader('authorization');
    if (!isFormContentType(req.getHeader('content-type'))) {
      exchange.sendError(OAuthErrors.notFormEncoded, { closeConnection: true });
      return;
    }
    const declaredLength = req.getHeader('content-length');
    if (declaredLength.length > 0 && Number(declaredLength) > maxBodyBytes) {
      exchange.sendError(OAuthErrors.bodyTooLarge, { closeConnection: true });
      return;
    }
    readBody(
      exchange,
      maxBodyBytes,
      (body) => {
        const parsed = parseForm(body);
        if (!parsed.ok) exchange.sendError(parseFailures[parsed.reason]);
        else onForm({ exchange, params: parsed.params, authorization });
      },
      () => exchange.sendError(OAuthErrors.bodyTooLarge, { closeConnection: true }),
    );
  };
}
