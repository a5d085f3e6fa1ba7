import type { IncomingHttpHeaders } from 'node:http';
import { COMPAT_HEADER_PREFIX, HEADERS, PRIMARY_HEADER_PREFIX } from '@bds/client/protocol';
import type { ServiceOptions } from '../config/options.ts';
import { BdsError, ErrorCode, unauthorized } from '../kernel/errors.ts';
import { keyAuthority } from '../kernel/keys.ts';

/** Credentials as sent, before they are checked. */
export interface Credentials {
  applicationId?: string;
  restAPIKey?: string;
  javascriptKey?: string;
  clientKey?: string;
  masterKey?: string;
  sessionToken?: string;
  installationId?: string;
  requestId?: string;
}

/** The credentials read from headers (docs/protocol.md#credentials); names from the protocol table. */
const HEADER_KEYS: Array<keyof Credentials & keyof typeof HEADERS> = [
  'applicationId',
  'restAPIKey',
  'javascriptKey',
  'clientKey',
  'masterKey',
  'sessionToken',
  'installationId',
  'requestId',
];

/** Body fields of the "POST with _method" form that carry credentials. */
const BODY_FIELDS: Array<[keyof Credentials, string]> = [
  ['applicationId', '_ApplicationId'],
  ['javascriptKey', '_JavaScriptKey'],
  ['clientKey', '_ClientKey'],
  ['masterKey', '_MasterKey'],
  ['sessionToken', '_SessionToken'],
  ['installationId', '_InstallationId'],
];

/** Body fields SDKs add to the `_method` form that are not data. */
const BODY_META = ['_method', '_ClientVersion', '_RevocableSession', '_ContentType', '_context'];

/** What a body of the `_method` form carries besides its data. */
export interface LiftedBody {
  /** The method to route as (`_method`), upper case; undefined when the body names none. */
  method: string | undefined;
  /** `_ContentType`: the content type the body stands for (an upload's file type in the SDKs' JSON form). */
  contentType: string | undefined;
  /** The body without its credentials and meta fields. */
  body: Record<string, unknown>;
}

/** Header names, built once and lower-cased as node gives them: [credential, X-Backend- name, X-Parse- name]. */
const HEADER_NAMES = HEADER_KEYS.map((key) => {
  const suffix = HEADERS[key].slice(PRIMARY_HEADER_PREFIX.length);
  return [
    key,
    (PRIMARY_HEADER_PREFIX + suffix).toLowerCase(),
    (COMPAT_HEADER_PREFIX + suffix).toLowerCase(),
  ] as const;
});

export function credentialsFromHeaders(headers: IncomingHttpHeaders): Credentials {
  const creds: Credentials = {};
  for (const [key, primary, alias] of HEADER_NAMES) {
    const v = headers[primary] ?? headers[alias];
    if (v !== undefined) creds[key] = Array.isArray(v) ? v[0] : v;
  }
  return creds;
}

/**
 * The `_method` form (also the SDKs' JSON form of a file upload): lifts credentials out of a POST
 * body (they win over nothing: a header, when present, is kept) and answers the method to route as
 * and the content type the body names.
 */
export function liftBodyCredentials(body: Record<string, unknown>, creds: Credentials): LiftedBody {
  const rest: Record<string, unknown> = { ...body };
  for (const [key, field] of BODY_FIELDS) {
    const v = rest[field];
    if (v === undefined) continue;
    delete rest[field];
    if (typeof v === 'string' && creds[key] === undefined) creds[key] = v;
  }
  const method = typeof rest._method === 'string' ? rest._method.toUpperCase() : undefined;
  const contentType = typeof rest._ContentType === 'string' ? rest._ContentType : undefined;
  for (const field of BODY_META) delete rest[field];
  return { method, contentType, body: rest };
}

/** Checks the application id and keys (kernel/keys.ts, shared with realtime); answers whether the caller holds the master key. */
export function checkKeys(creds: Credentials, options: ServiceOptions): { master: boolean } {
  const authority = keyAuthority(creds, options);
  if (authority === undefined) throw unauthorized();
  return { master: authority === 'master' };
}

export function badMethod(method: string): BdsError {
  return new BdsError(ErrorCode.INVALID_JSON, `Unsupported _method: ${method}.`);
}
