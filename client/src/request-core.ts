/**
 * The request core every service of a client goes through: which credential a call sends, the
 * headers, the body (JSON or streamed bytes), the response cache, the scrubbed log, and how an
 * answer becomes a result or an error. HTTP-level failures (401, 403, 5xx, network) and invalid
 * sessions throw; protocol errors come back as `{success: false, code, error}`.
 */
import { currentSlot } from './ambient.ts';
import { isClientMode } from './client-mode.ts';
import {
  ArgumentError,
  AuthenticationError,
  ConnectionError,
  InvalidSessionError,
  ServerError,
} from './errors.ts';
import {
  type AuthOptions,
  type ClientOptions,
  checkAuthOptions,
  type FileBody,
  type RequestOptions,
  type ResolvedAuth,
  type Result,
} from './options.ts';
import { ErrorCode } from './protocol/errors.ts';
import { HEADERS } from './protocol/headers.ts';
import { classOfPath, ResponseCache } from './response-cache.ts';
import { scrub, scrubHeaders } from './scrub.ts';

export class RequestCore {
  readonly serverURL: string;
  readonly applicationId: string;
  readonly options: Readonly<ClientOptions>;
  /** The token the client is bound to (its lowest-priority credential), or null. */
  readonly boundToken: string | null;
  readonly fetchImpl: typeof fetch;
  private readonly cache: ResponseCache | null;

  constructor(options: ClientOptions) {
    if (!options?.serverURL) throw new ArgumentError('serverURL is required.');
    if (!options.applicationId) throw new ArgumentError('applicationId is required.');
    this.options = { ...options };
    this.serverURL = options.serverURL.replace(/\/+$/, '');
    this.applicationId = options.applicationId;
    this.boundToken = options.sessionToken ?? null;
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.cache = options.cache
      ? new ResponseCache(typeof options.cache === 'object' ? (options.cache.ttlMs ?? 60_000) : 60_000)
      : null;
  }

  /** True when a master key is configured and client mode is off. */
  get canUseMasterKey(): boolean {
    return Boolean(this.options.masterKey) && !isClientMode();
  }

  /**
   * Credential resolution: explicit `sessionToken` (a blank one means anonymous) or
   * `useMasterKey: true` wins; then the ambient session; then the bound token; then, with no
   * preference (`useMasterKey` undefined) and `defaultMaster`, the configured master key.
   */
  resolveAuth(options: AuthOptions = {}, defaultMaster = true): ResolvedAuth {
    if ('sessionToken' in options && options.sessionToken !== undefined) {
      const t = options.sessionToken;
      if (typeof t !== 'string' || t.trim() === '') return { kind: 'none' };
      return { kind: 'session', token: t };
    }
    if (options.useMasterKey === true && this.canUseMasterKey) return { kind: 'master' };
    const ambient = currentSlot().sessionToken;
    if (ambient) return { kind: 'session', token: ambient };
    if (this.boundToken) return { kind: 'session', token: this.boundToken };
    if (options.useMasterKey === undefined && defaultMaster && this.canUseMasterKey)
      return { kind: 'master' };
    return { kind: 'none' };
  }

  /** The headers a call with these options sends. */
  headersFor(auth: ResolvedAuth, installationId?: string): Record<string, string> {
    const h: Record<string, string> = { [HEADERS.applicationId]: this.applicationId };
    const o = this.options;
    if (o.restAPIKey) h[HEADERS.restAPIKey] = o.restAPIKey;
    if (o.javaScriptKey) h[HEADERS.javascriptKey] = o.javaScriptKey;
    if (o.clientKey) h[HEADERS.clientKey] = o.clientKey;
    if (auth.kind === 'master' && o.masterKey && !isClientMode()) h[HEADERS.masterKey] = o.masterKey;
    if (auth.kind === 'session') h[HEADERS.sessionToken] = auth.token;
    const inst = installationId ?? o.installationId;
    if (inst) h[HEADERS.installationId] = inst;
    return h;
  }

  /** Forgets the cached answers of a class (a write changed it). */
  invalidateClass(className: string): void {
    this.cache?.forgetClass(className);
  }

  /** Clears the response cache. */
  clearCache(): void {
    this.cache?.clear();
  }

  /** Refuses a master-only call locally (no request) unless this client holds a usable master key. */
  requireMaster(what: string): void {
    if (!this.canUseMasterKey) {
      throw new AuthenticationError(
        `${what} requires master key: this client has none (or runs in client mode).`,
      );
    }
  }

  /** Sends one request (see the module's comment for what throws and what is answered). */
  async request<T = any>(
    method: string,
    path: string,
    options: RequestOptions = {},
    defaultMaster = true,
  ): Promise<Result<T>> {
    const authOpts = checkAuthOptions(options);
    const auth = this.resolveAuth(authOpts, defaultMaster);
    const headers = { ...this.headersFor(auth, authOpts.installationId), ...options.headers };
    let url = `${this.serverURL}${path}`;
    if (options.query) {
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(options.query)) {
        if (v === undefined) continue;
        search.set(k, typeof v === 'string' ? v : JSON.stringify(v));
      }
      const qs = search.toString();
      if (qs) url += `${path.includes('?') ? '&' : '?'}${qs}`;
    }
    let body: RequestInit['body'] | undefined;
    let streamed = false;
    if (options.rawBody !== undefined) {
      ({ body, streamed } = rawBodyInit(options.rawBody));
      headers['Content-Type'] = options.contentType ?? 'application/octet-stream';
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] = 'application/json';
    }

    const classMatch = /^\/classes\/([^/?]+)/.exec(path);
    const className = classOfPath(path);
    const cacheable = this.cache && method === 'GET' && classMatch;
    let key: string | undefined;
    if (cacheable) {
      key = await this.cache!.keyFor(auth, url);
      const hit = this.cache!.fresh(key);
      if (hit) return hit as Result<T>;
    } else if (method !== 'GET' && className) {
      this.invalidateClass(className);
    }

    const started = Date.now();
    let res: Response;
    try {
      // A streamed body needs half-duplex fetch (Node); browsers get Blobs and bytes.
      const init: RequestInit & { duplex?: 'half' } = { method, headers, body };
      if (streamed) init.duplex = 'half';
      res = await this.fetchImpl(url, init);
    } catch (err) {
      this.log(method, path, headers, options.body, undefined, undefined, started);
      throw new ConnectionError(`Request ${method} ${path} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    options.onHeaders?.(res.headers);
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const code = typeof json?.code === 'number' ? json.code : undefined;
    const message = typeof json?.error === 'string' ? json.error : text || res.statusText;
    this.log(method, path, headers, options.body, res.status, json, started, code);

    if (code === ErrorCode.INVALID_SESSION_TOKEN)
      throw new InvalidSessionError(message, { code, status: res.status });
    if (res.status === 401 || res.status === 403) {
      throw new AuthenticationError(message, { code, status: res.status });
    }
    if (res.status >= 500) throw new ServerError(message, { code, status: res.status });
    if (!res.ok) {
      return { success: false, status: res.status, code: code ?? res.status, error: message };
    }
    const result: Result<T> = { success: true, status: res.status, data: json as T };
    if (cacheable && key) this.cache!.keep(key, decodeURIComponent(classMatch[1]!), result);
    return result;
  }

  private log(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: unknown,
    status: number | undefined,
    response: unknown,
    started: number,
    code?: number,
  ): void {
    const logger = this.options.logger;
    if (!logger) return;
    const objectId =
      /^\/(?:classes\/[^/]+|users|roles|sessions|installations)\/([A-Za-z0-9]+)/.exec(path)?.[1] ??
      (response as any)?.objectId;
    logger({
      method,
      path,
      ...(objectId ? { objectId } : {}),
      ...(status !== undefined ? { status } : {}),
      ...(code !== undefined ? { code } : {}),
      headers: scrubHeaders(headers),
      ...(body !== undefined ? { body: scrub(body) } : {}),
      ...(response !== undefined ? { response: scrub(response) } : {}),
      durationMs: Date.now() - started,
    });
  }
}

/** A fetch body for raw bytes; streams (web or Node) go as a ReadableStream with half-duplex. */
function rawBodyInit(data: FileBody): { body: RequestInit['body']; streamed: boolean } {
  if (typeof Blob !== 'undefined' && data instanceof Blob) return { body: data, streamed: false };
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data))
    return { body: data as RequestInit['body'], streamed: false };
  if (typeof ReadableStream !== 'undefined' && data instanceof ReadableStream)
    return { body: data, streamed: true };
  const iterator = (data as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value instanceof Uint8Array ? value : new Uint8Array(value));
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
  return { body: stream, streamed: true };
}
