/** Log scrubbing per SPEC "Secret handling in client logs". */

export const FILTERED = '[FILTERED]';

const SECRET_KEYS = new Set(
  [
    'password',
    'token',
    'sessionToken',
    'session_token',
    'access_token',
    'refreshToken',
    'refresh_token',
    'authData',
    'masterKey',
    'master_key',
    'apiKey',
    'api_key',
    'clientKey',
    'client_key',
    'javascriptKey',
    'javascript_key',
  ].map((k) => k.toLowerCase()),
);

const SECRET_HEADERS = new Set(
  [
    'X-Backend-Master-Key',
    'X-Backend-REST-API-Key',
    'X-Backend-Session-Token',
    'X-Backend-JavaScript-Key',
    'X-Backend-Client-Key',
    'X-Parse-Master-Key',
    'X-Parse-REST-API-Key',
    'X-Parse-Session-Token',
    'X-Parse-JavaScript-Key',
    'X-Parse-Client-Key',
    'Authorization',
    'Cookie',
    'X-Api-Key',
    // embedding-provider account headers
    'OpenAI-Organization',
    'OpenAI-Project',
    'Api-Key',
    'X-Goog-Api-Key',
    'Anthropic-Api-Key',
    'X-Cohere-Api-Key',
  ].map((h) => h.toLowerCase()),
);

/** Numeric-only arrays at least this long are replaced by a placeholder. */
export const VECTOR_MIN_DIMS = 32;

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

export function isSecretHeader(name: string): boolean {
  return SECRET_HEADERS.has(name.toLowerCase());
}

function looksLikeJson(s: string): boolean {
  const t = s.trim();
  return (t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'));
}

/**
 * Returns a copy of `value` with secrets replaced by `[FILTERED]` (keys matched
 * case-insensitively, at any depth, including inside JSON embedded in strings) and long
 * numeric arrays replaced by `"<vector dims=N>"`. Everything else is kept as is.
 */
export function scrub(value: unknown): unknown {
  if (Array.isArray(value)) {
    if (value.length >= VECTOR_MIN_DIMS && value.every((v) => typeof v === 'number')) {
      return `<vector dims=${value.length}>`;
    }
    return value.map((v) => scrub(v));
  }
  if (typeof value === 'string') {
    if (looksLikeJson(value)) {
      try {
        return JSON.stringify(scrub(JSON.parse(value)));
      } catch {
        return value;
      }
    }
    return value;
  }
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k) ? FILTERED : scrub(v);
    return out;
  }
  return value;
}

/** Replaces the values of secret headers by `[FILTERED]`. */
export function scrubHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = isSecretHeader(k) ? FILTERED : v;
  return out;
}
