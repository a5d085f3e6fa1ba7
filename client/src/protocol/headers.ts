/**
 * Credential headers (docs/protocol.md#credentials). The service also accepts each with the prefix
 * `X-Parse-` instead of `X-Backend-`.
 */
export const HEADERS = {
  applicationId: 'X-Backend-Application-Id',
  restAPIKey: 'X-Backend-REST-API-Key',
  javascriptKey: 'X-Backend-JavaScript-Key',
  clientKey: 'X-Backend-Client-Key',
  masterKey: 'X-Backend-Master-Key',
  sessionToken: 'X-Backend-Session-Token',
  installationId: 'X-Backend-Installation-Id',
  requestId: 'X-Backend-Request-Id',
  webhookKey: 'X-Backend-Webhook-Key',
} as const;

export type CredentialName = keyof typeof HEADERS;

/**
 * The trace id of one request (docs/protocol.md#request-ids), on every answer: the one a trusted
 * proxy sent (option `trustProxy`), else one the service made. Not `HEADERS.requestId`, which is
 * the caller's idempotency key.
 */
export const TRACE_HEADER = 'X-Request-Id';

/**
 * The console user a master-key call of the console's backend is made for (docs/protocol.md#row-history):
 * the service records that call's writes under this name. Taken from master-key calls only.
 */
export const CONSOLE_USER_HEADER = 'X-BDS-Console-User';

/** What a trace id taken from a trusted proxy may be: 1 to 128 characters, letters, digits and `._:-`. */
export const TRACE_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Headers the service sets on answers. Each is also sent with the prefix `X-Parse-` (the name the
 * stock Parse SDKs read), and both are listed in `Access-Control-Expose-Headers`.
 */
export const RESPONSE_HEADERS = {
  jobStatusId: 'X-Backend-Job-Status-Id',
  pushStatusId: 'X-Backend-Push-Status-Id',
} as const;

export const PRIMARY_HEADER_PREFIX = 'X-Backend-';
export const COMPAT_HEADER_PREFIX = 'X-Parse-';

/** The `X-Parse-` spelling of a credential or response header. */
export const compatHeader = (name: string): string =>
  COMPAT_HEADER_PREFIX + name.slice(PRIMARY_HEADER_PREFIX.length);

/** Every name of the response headers, each followed by its `X-Parse-` spelling. */
export const RESPONSE_HEADER_NAMES: readonly string[] = Object.values(RESPONSE_HEADERS).flatMap((name) => [
  name,
  compatHeader(name),
]);

/** A response header with its value, under both of its names. */
export function responseHeader(key: keyof typeof RESPONSE_HEADERS, value: string): Record<string, string> {
  const name = RESPONSE_HEADERS[key];
  return { [name]: value, [compatHeader(name)]: value };
}

/**
 * Headers the stock Parse SDKs send with a raw file upload, as they spell them. The service keeps a
 * file's metadata and tags (JSON objects of strings), refuses a directory, and takes the others as
 * they come.
 */
export const SDK_UPLOAD_HEADERS = {
  mode: 'X-Parse-Upload-Mode',
  metadata: 'X-Parse-File-Metadata',
  tags: 'X-Parse-File-Tags',
  directory: 'X-Parse-File-Directory',
  maxUploadSize: 'X-Parse-File-Max-Upload-Size',
} as const;
