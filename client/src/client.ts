import { currentSlot, runScoped } from './ambient.ts';
import {
  ArgumentError,
  AuthenticationError,
  CloudCodeError,
  ConnectionError,
  InvalidSessionError,
  ServerError,
} from './errors.ts';
import { foreignFileNameText, isIssuedFileName } from './protocol/files.ts';
import { HEADERS, RESPONSE_HEADERS } from './protocol/headers.ts';
import type { JobStatus } from './protocol/hooks.ts';
import {
  type LiveObject,
  type LiveQuerySpec,
  RealtimeConnection,
  type RealtimeOptions,
  type SubscribeOptions,
  type Subscription,
} from './realtime.ts';

export type { JobStatus } from './protocol/hooks.ts';

import { scrub, scrubHeaders } from './scrub.ts';

// ------------------------------------------------------------------------------------------------
// Process-wide client mode

let clientModeFlag: boolean | undefined;

function env(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.[name];
}

/** In client mode no master-key header is ever sent, whatever a client or a call asks for. */
export function setClientMode(on: boolean): void {
  clientModeFlag = on;
}

export function isClientMode(): boolean {
  return clientModeFlag ?? env('BDS_CLIENT_MODE') === 'true';
}

// ------------------------------------------------------------------------------------------------
// Ambient session and cache tenant

/** Runs `fn` with `token` as the ambient session token of the current async scope. */
export function withSession<R>(token: string, fn: () => R): R {
  return runScoped({ sessionToken: token, user: undefined }, fn);
}

/** Runs `fn` in a fresh ambient scope (imperative login inside it does not leak out). */
export function withScope<R>(fn: () => R): R {
  return runScoped({}, fn);
}

export function currentSessionToken(): string | undefined {
  return currentSlot().sessionToken;
}

const TENANT = /^[A-Za-z0-9_-]{1,256}$/;

/** Runs `fn` with `label` as the response-cache tenant scope. */
export function withCacheTenant<R>(label: string, fn: () => R): R {
  if (typeof label !== 'string' || label.includes(':')) {
    throw new ArgumentError('A cache tenant label may not contain a colon.');
  }
  if (!TENANT.test(label)) {
    throw new ArgumentError('A cache tenant label must match [A-Za-z0-9_-]{1,256}.');
  }
  return runScoped({ cacheTenant: label }, fn);
}

// ------------------------------------------------------------------------------------------------
// Types

export interface LogEntry {
  method: string;
  path: string;
  objectId?: string;
  status?: number;
  code?: number;
  headers: Record<string, string>;
  body?: unknown;
  response?: unknown;
  durationMs: number;
  /** Realtime frames (method `WS`): whether the frame was sent or received. */
  realtime?: 'send' | 'receive';
}

export interface ClientOptions {
  /** Base URL including the mount path, e.g. `http://localhost:1337/api`. */
  serverURL: string;
  applicationId: string;
  restAPIKey?: string;
  javaScriptKey?: string;
  clientKey?: string;
  /** Never ship a master key in a client build: leave it `null`/absent there. */
  masterKey?: string | null;
  /** Binds the client to a user (lowest-priority credential). */
  sessionToken?: string | null;
  installationId?: string;
  /** Receives one scrubbed entry per request. */
  logger?: (entry: LogEntry) => void;
  /** Opt-in response cache for reads of `/classes/...`. */
  cache?: boolean | { ttlMs?: number };
  silenceVersionWarning?: boolean;
  /** Server versions below this are warned about once. */
  minimumServerVersion?: string;
  fetch?: typeof fetch;
  /** The realtime address (default: the server's origin with `ws:`/`wss:` and `/live`). */
  liveQueryURL?: string;
  /** Defaults for this client's realtime connections (reconnect backoff, WebSocket class). */
  realtime?: Omit<RealtimeOptions, 'useMasterKey' | 'url'>;
}

/** Auth passed as direct options. */
export interface AuthOptions {
  /** Explicit session token; a blank one sends the call anonymously. */
  sessionToken?: string | null;
  /** `true` forces the master key (if configured and not in client mode); `false` refuses it. */
  useMasterKey?: boolean;
  installationId?: string;
}

/** A file's bytes: a Blob (browsers), bytes, or a stream (web ReadableStream or a Node Readable). */
export type FileBody =
  | Blob
  | ArrayBuffer
  | Uint8Array
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>;

export interface RequestOptions extends AuthOptions {
  body?: unknown;
  /** Raw bytes sent as they are (file uploads) instead of a JSON `body`. */
  rawBody?: FileBody;
  contentType?: string;
  /** Receives the answer's headers (X-Backend-Push-Status-Id, the job status id of POST /jobs). */
  onHeaders?: (headers: Headers) => void;
  query?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export type Success<T> = { success: true; status: number; data: T };
export type Failure = { success: false; status: number; code: number; error: string };
export type Result<T = any> = Success<T> | Failure;

export type ResolvedAuth = { kind: 'master' } | { kind: 'session'; token: string } | { kind: 'none' };

export interface QueryParams {
  where?: Record<string, unknown>;
  order?: string;
  limit?: number;
  skip?: number;
  keys?: string;
  excludeKeys?: string;
  include?: string;
  count?: boolean;
}

export interface BatchRequest {
  method: 'POST' | 'PUT' | 'DELETE' | 'GET';
  path: string;
  body?: unknown;
}

export type BatchItem = { success: any } | { error: { code: number; error: string } };

export const DEFAULT_MINIMUM_SERVER_VERSION = '0.1.0';
export const BATCH_SEGMENT = 50;

const EVENT_NAME = /^[\w\-.]+$/;
const AUTH_KEYS = new Set(['sessionToken', 'useMasterKey', 'installationId']);

/**
 * Rejects an options object that nests auth inside `opts`; auth must be passed as direct options.
 * Returns the direct auth options.
 */
export function checkAuthOptions(options: object | undefined): AuthOptions {
  if (!options) return {};
  if ('opts' in options) {
    throw new ArgumentError(
      'Pass auth as direct options (sessionToken, useMasterKey), not nested inside `opts`.',
    );
  }
  const out: AuthOptions = {};
  for (const k of AUTH_KEYS) if (k in options) (out as any)[k] = (options as any)[k];
  return out;
}

function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

let versionWarned = false;
/** For tests: allow the one-time version warning to fire again. */
export function resetVersionWarning(): void {
  versionWarned = false;
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

interface CacheEntry {
  className: string;
  expires: number;
  result: Result;
}

// ------------------------------------------------------------------------------------------------
// Client

export class Client {
  readonly serverURL: string;
  readonly applicationId: string;
  readonly options: Readonly<ClientOptions>;
  private readonly boundToken: string | null;
  private readonly fetchImpl: typeof fetch;
  private readonly cache: Map<string, CacheEntry> | null;
  private readonly cacheTtl: number;
  private liveScoped: RealtimeConnection | undefined;
  private liveAdmin: RealtimeConnection | undefined;
  private serverInfoPromise: Promise<{
    serverVersion?: string;
    features?: Record<string, unknown>;
  } | null> | null = null;

  constructor(options: ClientOptions) {
    if (!options?.serverURL) throw new ArgumentError('serverURL is required.');
    if (!options.applicationId) throw new ArgumentError('applicationId is required.');
    this.options = { ...options };
    this.serverURL = options.serverURL.replace(/\/+$/, '');
    this.applicationId = options.applicationId;
    this.boundToken = options.sessionToken ?? null;
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.cache = options.cache ? new Map() : null;
    this.cacheTtl = typeof options.cache === 'object' ? (options.cache.ttlMs ?? 60_000) : 60_000;
  }

  /** A client that acts as the user holding `token` (lowest-priority credential). */
  withSessionToken(token: string): Client {
    return new Client({ ...this.options, sessionToken: token });
  }

  /** The token bound to this client, if any. */
  get sessionToken(): string | null {
    return this.boundToken;
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

  private async cacheKey(auth: ResolvedAuth, url: string): Promise<string> {
    const who =
      auth.kind === 'master' ? 'master' : auth.kind === 'session' ? await sha256Hex(auth.token) : 'anon';
    return `${currentSlot().cacheTenant ?? '-'}:${who}:${url}`;
  }

  private invalidateClass(className: string): void {
    if (!this.cache) return;
    for (const [k, e] of this.cache) if (e.className === className) this.cache.delete(k);
  }

  /** Clears the response cache. */
  clearCache(): void {
    this.cache?.clear();
  }

  /**
   * Sends one request. HTTP-level failures (401, 403, 5xx, network) and invalid sessions throw;
   * protocol errors come back as `{success: false, code, error}`.
   */
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
      key = await this.cacheKey(auth, url);
      const hit = this.cache!.get(key);
      if (hit && hit.expires > Date.now()) return structuredClone(hit.result) as Result<T>;
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

    if (code === 209) throw new InvalidSessionError(message, { code, status: res.status });
    if (res.status === 401 || res.status === 403) {
      throw new AuthenticationError(message, { code, status: res.status });
    }
    if (res.status >= 500) throw new ServerError(message, { code, status: res.status });
    if (!res.ok) {
      return { success: false, status: res.status, code: code ?? res.status, error: message };
    }
    const result: Result<T> = { success: true, status: res.status, data: json as T };
    if (cacheable && key) {
      this.cache!.set(key, {
        className: decodeURIComponent(classMatch[1]!),
        expires: Date.now() + this.cacheTtl,
        result,
      });
    }
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

  // ---- records -------------------------------------------------------------------------------

  private static classPath(className: string): string {
    if (className === '_User') return '/users';
    if (className === '_Role') return '/roles';
    if (className === '_Session') return '/sessions';
    if (className === '_Installation') return '/installations';
    return `/classes/${encodeURIComponent(className)}`;
  }

  static pathFor(className: string, objectId?: string): string {
    const base = Client.classPath(className);
    return objectId ? `${base}/${encodeURIComponent(objectId)}` : base;
  }

  async find<T = any>(className: string, params: QueryParams = {}, options: AuthOptions = {}) {
    const { count, ...rest } = params;
    const query: Record<string, unknown> = { ...rest };
    if (count) query.count = 1;
    return this.request<{ results: T[]; count?: number }>(
      'GET',
      `/classes/${encodeURIComponent(className)}`,
      {
        ...checkAuthOptions(options),
        query,
      },
    );
  }

  async get<T = any>(
    className: string,
    objectId: string,
    options: AuthOptions & { include?: string; keys?: string } = {},
  ) {
    const { include, keys } = options;
    return this.request<T>(
      'GET',
      `/classes/${encodeURIComponent(className)}/${encodeURIComponent(objectId)}`,
      {
        ...checkAuthOptions(options),
        query: { include, keys },
      },
    );
  }

  async create<T = any>(className: string, fields: Record<string, unknown>, options: AuthOptions = {}) {
    return this.request<T>('POST', Client.pathFor(className), { ...checkAuthOptions(options), body: fields });
  }

  async update<T = any>(
    className: string,
    objectId: string,
    fields: Record<string, unknown>,
    options: AuthOptions = {},
  ) {
    return this.request<T>('PUT', Client.pathFor(className, objectId), {
      ...checkAuthOptions(options),
      body: fields,
    });
  }

  async destroy(className: string, objectId: string, options: AuthOptions = {}) {
    return this.request<Record<string, never>>(
      'DELETE',
      Client.pathFor(className, objectId),
      checkAuthOptions(options),
    );
  }

  /** POST /batch with at most `BATCH_SEGMENT` sub-requests per call; answers are concatenated in order. */
  async batch(requests: BatchRequest[], options: AuthOptions = {}): Promise<Result<BatchItem[]>> {
    const auth = checkAuthOptions(options);
    const out: BatchItem[] = [];
    let status = 200;
    for (let i = 0; i < requests.length; i += BATCH_SEGMENT) {
      const segment = requests.slice(i, i + BATCH_SEGMENT);
      const res = await this.request<BatchItem[]>('POST', '/batch', { ...auth, body: { requests: segment } });
      if (!res.success) return res;
      for (const r of segment) if (r.method !== 'GET') this.invalidateClass(classOfPath(r.path));
      status = res.status;
      out.push(...res.data);
    }
    return { success: true, status, data: out };
  }

  // ---- users ---------------------------------------------------------------------------------

  /** Raw login: an unsuccessful response carries the server's text on bad credentials. */
  async login(username: string, password: string, options: AuthOptions = {}) {
    checkAuthOptions(options);
    return this.request<Record<string, any>>(
      'POST',
      '/login',
      { installationId: options.installationId, body: { username, password } },
      false,
    );
  }

  async signUp(fields: Record<string, unknown>, options: AuthOptions = {}) {
    checkAuthOptions(options);
    return this.request<Record<string, any>>(
      'POST',
      '/users',
      { installationId: options.installationId, body: fields },
      false,
    );
  }

  /** GET /users/me; throws InvalidSessionError for a revoked or bogus token. */
  async me(options: AuthOptions = {}) {
    return this.request<Record<string, any>>('GET', '/users/me', checkAuthOptions(options), false);
  }

  /** POST /logout: revokes the session token the call resolves to. */
  async logout(options: AuthOptions = {}) {
    return this.request<Record<string, never>>('POST', '/logout', checkAuthOptions(options), false);
  }

  // ---- config, functions, push, events ---------------------------------------------------------

  async getConfig(options: AuthOptions = {}) {
    return this.request<{ params: Record<string, unknown> }>('GET', '/config', checkAuthOptions(options));
  }

  /** Calls a cloud function (POST /functions/<name>); answers `null` on failure. */
  async callFunction<T = any>(name: string, params: Record<string, unknown> = {}, options: AuthOptions = {}) {
    const res = await this.request<{ result: T }>('POST', `/functions/${encodeURIComponent(name)}`, {
      ...checkAuthOptions(options),
      body: params,
    });
    return res.success ? res.data.result : null;
  }

  /** Calls a cloud function; throws CloudCodeError carrying the response on failure. */
  async callFunctionOrThrow<T = any>(
    name: string,
    params: Record<string, unknown> = {},
    options: AuthOptions = {},
  ) {
    const res = await this.request<{ result: T }>('POST', `/functions/${encodeURIComponent(name)}`, {
      ...checkAuthOptions(options),
      body: params,
    });
    if (!res.success)
      throw new CloudCodeError(res.error, { code: res.code, status: res.status, response: res });
    return res.data.result;
  }

  /** Older names of callFunction and callFunctionOrThrow. */
  run<T = any>(name: string, params: Record<string, unknown> = {}, options: AuthOptions = {}) {
    return this.callFunction<T>(name, params, options);
  }

  runOrThrow<T = any>(name: string, params: Record<string, unknown> = {}, options: AuthOptions = {}) {
    return this.callFunctionOrThrow<T>(name, params, options);
  }

  /**
   * Starts a job (POST /jobs/<name>, master key or a session token) and answers its `_JobStatus`
   * id; the job runs in the background. Throws CloudCodeError carrying the response on failure.
   */
  async runJob(
    name: string,
    params: Record<string, unknown> = {},
    options: AuthOptions = {},
  ): Promise<string> {
    let statusId: string | null = null;
    const res = await this.request('POST', `/jobs/${encodeURIComponent(name)}`, {
      ...checkAuthOptions(options),
      body: params,
      onHeaders: (headers) => {
        statusId = headers.get(RESPONSE_HEADERS.jobStatusId);
      },
    });
    if (!res.success)
      throw new CloudCodeError(res.error, { code: res.code, status: res.status, response: res });
    if (!statusId)
      throw new CloudCodeError(`POST /jobs/${name} answered no job status id.`, { response: res });
    return statusId;
  }

  /** A job's `_JobStatus` row (master key: the class is master-only). */
  async jobStatus(statusId: string, options: AuthOptions = {}) {
    return this.get<JobStatus>('_JobStatus', statusId, { ...checkAuthOptions(options), useMasterKey: true });
  }

  /**
   * Polls a job's status until it is no longer `running` and answers the row; throws when
   * `timeoutMs` passes first (default 60 s) or the row cannot be read.
   */
  async waitForJob(
    statusId: string,
    options: AuthOptions & { intervalMs?: number; timeoutMs?: number } = {},
  ): Promise<JobStatus> {
    const { intervalMs = 500, timeoutMs = 60_000, ...auth } = options;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await this.jobStatus(statusId, auth);
      if (!res.success)
        throw new CloudCodeError(res.error, { code: res.code, status: res.status, response: res });
      if (res.data.status !== 'running') return res.data;
      if (Date.now() + intervalMs > deadline) {
        throw new CloudCodeError(`Job ${statusId} is still running after ${timeoutMs} ms.`, {
          response: res,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }

  /** POST /push. Refused locally (no request) unless this client holds a usable master key. */
  async sendPush(
    payload: { where?: Record<string, unknown>; channels?: string[]; data: Record<string, unknown> } & Record<
      string,
      unknown
    >,
    options: AuthOptions = {},
  ) {
    checkAuthOptions(options);
    this.requireMaster('sendPush');
    let pushStatusId: string | undefined;
    const res = await this.request<{ result: boolean; pushStatusId?: string }>('POST', '/push', {
      useMasterKey: true,
      body: payload,
      onHeaders: (h) => {
        pushStatusId = h.get(RESPONSE_HEADERS.pushStatusId) ?? undefined;
      },
    });
    if (res.success && pushStatusId) res.data = { ...res.data, pushStatusId };
    return res;
  }

  /** Refuses a master-only call locally (no request) unless this client holds a usable master key. */
  private requireMaster(what: string): void {
    if (!this.canUseMasterKey) {
      throw new AuthenticationError(
        `${what} requires master key: this client has none (or runs in client mode).`,
      );
    }
  }

  /** POST /aggregate/<C> (master only): `{results}`. */
  async aggregate<T = any>(
    className: string,
    pipeline: Array<Record<string, unknown>>,
    options: AuthOptions = {},
  ) {
    checkAuthOptions(options);
    this.requireMaster('aggregate');
    return this.request<{ results: T[] }>('POST', `/aggregate/${encodeURIComponent(className)}`, {
      useMasterKey: true,
      body: { pipeline },
    });
  }

  // ---- files -----------------------------------------------------------------------------------

  /**
   * POST /files/<name>: the bytes stream to the service (a Node Readable or web ReadableStream is
   * never read into memory). Answers `{name, url}`; put `{__type: 'File', name}` on a record (the
   * service refuses any other name there, and builds the url when the row is read).
   */
  async uploadFile(name: string, data: FileBody, options: AuthOptions & { contentType?: string } = {}) {
    const { contentType, ...auth } = options;
    const type =
      contentType ??
      (typeof Blob !== 'undefined' && data instanceof Blob && data.type ? data.type : undefined);
    return this.request<{ name: string; url: string }>('POST', `/files/${encodeURIComponent(name)}`, {
      ...checkAuthOptions(auth),
      rawBody: data,
      contentType: type,
    });
  }

  /**
   * GET a stored file of this service (a File value or its name): the answer's body as a stream,
   * so a large file is never held whole (in Node, `Readable.fromWeb(file.body)`); `range` asks for
   * a part (`[start, end]`, both included). The url is built from the name; a File value's `url`
   * is never fetched, and a name the service never issues (a url, a path) throws ArgumentError
   * before any request.
   */
  async downloadFile(
    file: string | { url?: string; name: string },
    options: { range?: [number, number] } = {},
  ) {
    const url = this.fileUrl(file);
    const headers: Record<string, string> = {};
    if (options.range) headers.Range = `bytes=${options.range[0]}-${options.range[1]}`;
    let res: Response;
    try {
      res = await this.fetchImpl(url, { headers });
    } catch (err) {
      throw new ConnectionError(`Download of ${url} failed: ${(err as Error).message}`, { cause: err });
    }
    if (!res.ok || !res.body) {
      const text = await res.text();
      let code = res.status;
      let error = text || res.statusText;
      try {
        const json = JSON.parse(text) as { code?: number; error?: string };
        code = json.code ?? code;
        error = json.error ?? error;
      } catch {
        // not JSON
      }
      return { success: false, status: res.status, code, error } as Failure;
    }
    return {
      success: true,
      status: res.status,
      data: {
        contentType: res.headers.get('content-type') ?? 'application/octet-stream',
        size: Number(res.headers.get('content-length') ?? Number.NaN),
        body: res.body as ReadableStream<Uint8Array>,
        headers: res.headers,
      },
    } as Success<{ contentType: string; size: number; body: ReadableStream<Uint8Array>; headers: Headers }>;
  }

  /** A stored file's bytes as a Blob (browsers; small files in Node); the same rules as downloadFile. */
  async downloadBlob(file: string | { url?: string; name: string }): Promise<Result<Blob>> {
    const res = await this.downloadFile(file);
    if (!res.success) return res;
    const blob = await new Response(res.data.body).blob();
    return { success: true, status: res.status, data: new Blob([blob], { type: res.data.contentType }) };
  }

  /** DELETE /files/<name> (master only). */
  async deleteFile(name: string, options: AuthOptions = {}) {
    checkAuthOptions(options);
    this.requireMaster('deleteFile');
    return this.request<Record<string, never>>('DELETE', `/files/${encodeURIComponent(name)}`, {
      useMasterKey: true,
    });
  }

  /** The service's url of a stored file, from its issued name only. */
  private fileUrl(file: string | { url?: string; name: string }): string {
    const name = typeof file === 'string' ? file : file?.name;
    if (!isIssuedFileName(name)) throw new ArgumentError(foreignFileNameText(String(name)));
    return `${this.serverURL}/files/${encodeURIComponent(this.applicationId)}/${encodeURIComponent(name)}`;
  }

  /** POST /events/<name>. The name must match `^[\w\-.]+$`. */
  async trackEvent(
    name: string,
    dimensions: Record<string, string> = {},
    at?: Date | string,
    options: AuthOptions = {},
  ) {
    if (typeof name !== 'string' || !EVENT_NAME.test(name)) {
      throw new ArgumentError(
        `Invalid event name ${JSON.stringify(name)}: use word characters, hyphens and dots.`,
      );
    }
    const body: Record<string, unknown> = { dimensions };
    if (at !== undefined) body.at = at instanceof Date ? at.toISOString() : at;
    return this.request<Record<string, never>>('POST', `/events/${encodeURIComponent(name)}`, {
      ...checkAuthOptions(options),
      body,
    });
  }

  // ---- realtime --------------------------------------------------------------------------------

  /**
   * This client's shared realtime connection (after `enableRealtime()`): scoped by default (no
   * master key is sent, even when one is configured), admin with `useMasterKey: true` (master
   * authority for every subscription on it; refused without a usable master key). Scoped and admin
   * streams never share a connection. Options apply when the connection is created.
   */
  realtime(options: RealtimeOptions = {}): RealtimeConnection {
    if (options.useMasterKey === true) {
      if (!this.liveAdmin || this.liveAdmin.status === 'closed')
        this.liveAdmin = new RealtimeConnection(this, { ...options, useMasterKey: true });
      return this.liveAdmin;
    }
    if (!this.liveScoped || this.liveScoped.status === 'closed')
      this.liveScoped = new RealtimeConnection(this, { ...options, useMasterKey: false });
    return this.liveScoped;
  }

  /**
   * Subscribes on the shared scoped connection (see `RealtimeConnection.subscribe`). Master
   * authority is not offered per subscription: use `realtime({ useMasterKey: true }).subscribe`.
   */
  subscribe<T = LiveObject>(query: LiveQuerySpec, options: SubscribeOptions = {}): Subscription<T> {
    return this.realtime().subscribe<T>(query, options);
  }

  /** Closes this client's shared realtime connections. */
  closeRealtime(): void {
    this.liveScoped?.close();
    this.liveAdmin?.close();
    this.liveScoped = undefined;
    this.liveAdmin = undefined;
  }

  // ---- versioning --------------------------------------------------------------------------------

  /** GET /serverInfo once per client; `null` when unavailable. */
  serverInfo(): Promise<{ serverVersion?: string; features?: Record<string, unknown> } | null> {
    this.serverInfoPromise ??= this.request('GET', '/serverInfo', {}, true)
      .then((res) => {
        if (!res.success || typeof res.data !== 'object' || res.data === null) return null;
        this.checkVersion(res.data.serverVersion);
        return res.data;
      })
      .catch(() => null);
    return this.serverInfoPromise;
  }

  /** The server's features block (`{}` when unavailable). */
  async serverFeatures(): Promise<Record<string, unknown>> {
    const info = await this.serverInfo();
    return (info?.features as Record<string, unknown>) ?? {};
  }

  /**
   * Whether the server supports `feature` (a dot path into the features block, e.g.
   * `batch.transaction`). Without server information, a modern server is assumed (true).
   */
  async serverSupports(feature: string): Promise<boolean> {
    const info = await this.serverInfo();
    if (!info?.features) return true;
    let node: unknown = info.features;
    for (const part of feature.split('.')) {
      if (node === null || typeof node !== 'object' || !(part in node)) return false;
      node = (node as Record<string, unknown>)[part];
    }
    return Boolean(node);
  }

  private checkVersion(version: unknown): void {
    if (typeof version !== 'string' || versionWarned) return;
    if (this.options.silenceVersionWarning || env('BDS_SILENCE_VERSION_WARNING') === '1') return;
    const minimum = this.options.minimumServerVersion ?? DEFAULT_MINIMUM_SERVER_VERSION;
    if (compareVersions(version, minimum) < 0) {
      versionWarned = true;
      console.warn(
        `[@bds/client] The server version ${version} is older than ${minimum}; some features may be missing. ` +
          'Set silenceVersionWarning or BDS_SILENCE_VERSION_WARNING=1 to silence this warning.',
      );
    }
  }
}

function classOfPath(path: string): string {
  const p = path.replace(/^\/[^/]+(?=\/(classes|users|roles)\b)/, '');
  const m = /^\/classes\/([^/?]+)/.exec(p);
  if (m) return decodeURIComponent(m[1]!);
  if (p.startsWith('/users')) return '_User';
  if (p.startsWith('/roles')) return '_Role';
  return '';
}

export function createClient(options: ClientOptions): Client {
  return new Client(options);
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
