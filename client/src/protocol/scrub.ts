/** Log scrubbing (docs/protocol.md#log-scrubbing): one set of rules for every package. */
import { HEADERS } from './headers.ts';

export const FILTERED = '[FILTERED]';

/** The fields of a user that hold a credential: what the console never shows (a subset of SECRET_KEYS). */
export const CREDENTIAL_FIELDS = ['password', 'sessionToken', 'authData'] as const;

/**
 * A credential field of a user or session row: the console never writes it as a plain value (its
 * grid, row panel, bulk edit and JSON editors refuse it, and so does the bff). A password changes
 * only through its own control, with a confirmation; the others are the service's to set.
 */
export function isCredentialField(className: string, field: string): boolean {
  return (
    (className === '_User' || className === '_Session') &&
    (CREDENTIAL_FIELDS as readonly string[]).includes(field)
  );
}

/** Why a credential field is refused as a plain value, and where to go instead. */
export function credentialRefusal(field: string): string {
  return field === 'password'
    ? 'password: a user\'s password changes only through "Set password" (Security → Users), which asks for a confirmation.'
    : `${field}: credentials are not edited in the console.`;
}

/** Keys whose values are replaced by `[FILTERED]`, matched case-insensitively (docs/protocol.md#log-scrubbing). */
export const SECRET_KEYS: readonly string[] = [
  'password',
  'token',
  'sessionToken',
  'session_token',
  'access_token',
  'refreshToken',
  'refresh_token',
  // An auth provider's ID token (OpenID Connect), wherever a payload is logged outside authData.
  'id_token',
  'idToken',
  'authData',
  'masterKey',
  'master_key',
  'apiKey',
  'api_key',
  'clientKey',
  'client_key',
  'javascriptKey',
  'javascript_key',
];

/**
 * Request headers whose values are replaced by `[FILTERED]` (docs/protocol.md#log-scrubbing), both prefixes. Built by
 * a call marked pure, so a browser bundle that does not use it (the console) carries no key header
 * name at all.
 */
export const SECRET_HEADERS: readonly string[] = /* @__PURE__ */ secretHeaders();

function secretHeaders(): readonly string[] {
  const keyHeaders = [
    HEADERS.masterKey,
    HEADERS.restAPIKey,
    HEADERS.sessionToken,
    HEADERS.javascriptKey,
    HEADERS.clientKey,
    HEADERS.webhookKey,
  ];
  return [
    ...keyHeaders,
    ...keyHeaders.map((h) => h.replace(/^X-Backend-/, 'X-Parse-')),
    'Authorization',
    'Cookie',
    'Set-Cookie',
    'X-Api-Key',
    // embedding-provider account headers
    'OpenAI-Organization',
    'OpenAI-Project',
    'Api-Key',
    'X-Goog-Api-Key',
    'Anthropic-Api-Key',
    'X-Cohere-Api-Key',
  ];
}

const lowerCaseSet = (names: readonly string[]) => new Set(names.map((n) => n.toLowerCase()));

const SECRET_KEY_SET = /* @__PURE__ */ lowerCaseSet(SECRET_KEYS);
const SECRET_HEADER_SET = /* @__PURE__ */ lowerCaseSet(SECRET_HEADERS);

/** Numeric-only arrays at least this long are replaced by a placeholder (docs/protocol.md#log-scrubbing). */
export const VECTOR_MIN_DIMS = 32;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY_SET.has(key.toLowerCase());
}

export function isSecretHeader(name: string): boolean {
  return SECRET_HEADER_SET.has(name.toLowerCase());
}

function looksLikeJson(s: string): boolean {
  const t = s.trim();
  return (t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'));
}

/**
 * Returns `value` with secrets replaced by `[FILTERED]` (keys matched case-insensitively, at any
 * depth, including inside JSON embedded in strings) and long numeric arrays replaced by
 * `"<vector dims=N>"`. `value` itself is never changed: what needs scrubbing is copied, and what
 * does not is shared (so a log record without secrets costs no copy).
 */
export function scrub(value: unknown): unknown {
  if (Array.isArray(value)) {
    if (value.length >= VECTOR_MIN_DIMS && value.every((v) => typeof v === 'number')) {
      return `<vector dims=${value.length}>`;
    }
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const scrubbed = scrub(value[i]);
      if (scrubbed !== value[i]) {
        out ??= value.slice();
        out[i] = scrubbed;
      }
    }
    return out ?? value;
  }
  if (typeof value === 'string') {
    if (looksLikeJson(value)) {
      try {
        const parsed = JSON.parse(value);
        const scrubbed = scrub(parsed);
        return scrubbed === parsed ? value : JSON.stringify(scrubbed);
      } catch {
        return value;
      }
    }
    return value;
  }
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    let out: Record<string, unknown> | undefined;
    const record = value as Record<string, unknown>;
    for (const k of Object.keys(record)) {
      const v = record[k];
      const scrubbed = isSecretKey(k) ? FILTERED : scrub(v);
      if (scrubbed !== v) {
        out ??= { ...record };
        out[k] = scrubbed;
      }
    }
    return out ?? value;
  }
  return value;
}

/** Replaces the values of secret headers by `[FILTERED]`. */
export function scrubHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = isSecretHeader(k) ? FILTERED : v;
  return out;
}
