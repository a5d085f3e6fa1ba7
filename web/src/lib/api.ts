/**
 * The only way the console talks to its backend: JSON over same-origin `/bff/` with the session
 * cookie. State-changing requests carry the CSRF header the bff requires. Errors arrive as
 * `{code, error}` (the service's and the bff's) and are thrown as an ApiError.
 */
import { ErrorCode } from '@bds/client/protocol';

export const BFF_BASE = '/bff';
export const CSRF_HEADER = 'X-Console-CSRF';

export class ApiError extends Error {
  readonly status: number;
  readonly code: number;
  readonly error: string;

  constructor(status: number, code: number, error: string) {
    super(`${error} (code ${code})`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.error = error;
  }
}

export const isApiError = (err: unknown): err is ApiError => err instanceof ApiError;

/** An error as the console says it inline: the service's code and text for an ApiError. */
export const errorText = (err: unknown): string =>
  isApiError(err) ? `Error ${err.code}: ${err.error}` : err instanceof Error ? err.message : String(err);

/** Listeners told when any request answers 401 (the session ended). */
const unauthorizedListeners = new Set<() => void>();
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

export type QueryValue = string | number | boolean | undefined | null;

export interface ApiRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** JSON body. */
  body?: unknown;
  query?: Record<string, QueryValue>;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

/** `/bff` + path + query string. Path segments are the caller's to encode (see `seg`). */
export function bffUrl(path: string, query?: Record<string, QueryValue>): string {
  let url = `${BFF_BASE}${path.startsWith('/') ? path : `/${path}`}`;
  if (query) {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) search.set(k, String(v));
    const qs = search.toString();
    if (qs) url += `${url.includes('?') ? '&' : '?'}${qs}`;
  }
  return url;
}

/** Encodes one path segment: `api.get(\`/apps/${seg(appId)}/config\`)`. */
export const seg = (value: string): string => encodeURIComponent(value);

/**
 * A response that public/early-requests.js started before the app loaded, for exactly this URL:
 * taken once, then gone.
 */
function takePreloaded(url: string): Promise<Response> | undefined {
  const early = (globalThis as { __bdsEarly?: Record<string, Promise<Response>> }).__bdsEarly;
  const res = early?.[url];
  if (res) delete early[url];
  return res;
}

export async function apiFetch<T>(path: string, init: ApiRequest = {}): Promise<T> {
  const method = init.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json', ...init.headers };
  if (method !== 'GET') headers[CSRF_HEADER] = '1';
  let body: string | undefined;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['Content-Type'] = 'application/json';
  }
  let res: Response;
  const url = bffUrl(path, init.query);
  try {
    res = await ((method === 'GET' && !init.headers && takePreloaded(url)) ||
      fetch(url, {
        method,
        headers,
        body,
        credentials: 'same-origin',
        signal: init.signal,
      }));
  } catch (err) {
    if ((err as Error)?.name === 'AbortError') throw err;
    throw new ApiError(0, ErrorCode.CONNECTION_FAILED, 'The console backend is unreachable.');
  }
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const e = (data ?? {}) as { code?: unknown; error?: unknown };
    const code =
      typeof e.code === 'number'
        ? e.code
        : res.status >= 500
          ? ErrorCode.INTERNAL_SERVER_ERROR
          : ErrorCode.INVALID_JSON;
    const error = typeof e.error === 'string' ? e.error : `${res.status} ${res.statusText}`.trim();
    if (res.status === 401 && path !== '/login') for (const l of unauthorizedListeners) l();
    throw new ApiError(res.status, code, error);
  }
  return data as T;
}

export const api = {
  get: <T>(path: string, query?: Record<string, QueryValue>, signal?: AbortSignal) =>
    apiFetch<T>(path, { query, signal }),
  post: <T>(path: string, body?: unknown) => apiFetch<T>(path, { method: 'POST', body }),
  put: <T>(path: string, body?: unknown) => apiFetch<T>(path, { method: 'PUT', body }),
  patch: <T>(path: string, body?: unknown) => apiFetch<T>(path, { method: 'PATCH', body }),
  delete: <T>(path: string, body?: unknown) => apiFetch<T>(path, { method: 'DELETE', body }),
};
