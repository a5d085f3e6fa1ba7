/**
 * Credential headers (PROTOCOL.md "Credentials"). The service also accepts each with the prefix
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

/** Headers the service sets on answers. */
export const RESPONSE_HEADERS = {
  jobStatusId: 'X-Backend-Job-Status-Id',
  pushStatusId: 'X-Backend-Push-Status-Id',
} as const;

export const PRIMARY_HEADER_PREFIX = 'X-Backend-';
export const COMPAT_HEADER_PREFIX = 'X-Parse-';

/** The `X-Parse-` spelling of a credential header. */
export const compatHeader = (name: string): string =>
  COMPAT_HEADER_PREFIX + name.slice(PRIMARY_HEADER_PREFIX.length);
