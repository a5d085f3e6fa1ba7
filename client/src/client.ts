/**
 * The client: one request core (credentials, headers, the response cache, the log) and the
 * services over it (records, accounts, files, cloud code, config, push, analytics, server info),
 * plus this client's shared realtime connections. Each method hands its call to the service that
 * owns it; the rules live there.
 */
import type {
  AuthOptions,
  ClientOptions,
  FileBody,
  RequestOptions,
  ResolvedAuth,
  Result,
} from './options.ts';
import type { JobStatus } from './protocol/hooks.ts';
import { RealtimeConnection } from './realtime/connection.ts';
import type { RealtimeHost } from './realtime/host.ts';
import type { Subscription } from './realtime/subscription.ts';
import type { LiveObject, LiveQuerySpec, RealtimeOptions, SubscribeOptions } from './realtime/types.ts';
import { RequestCore } from './request-core.ts';
import * as accounts from './services/accounts.ts';
import * as analytics from './services/analytics.ts';
import * as cloud from './services/cloud.ts';
import * as config from './services/config.ts';
import * as files from './services/files.ts';
import * as push from './services/push.ts';
import type { BatchItem, BatchRequest, QueryParams } from './services/records.ts';
import * as records from './services/records.ts';
import { ServerInfo } from './services/server-info.ts';

export class Client implements RealtimeHost {
  readonly serverURL: string;
  readonly applicationId: string;
  readonly options: Readonly<ClientOptions>;
  private readonly core: RequestCore;
  private readonly info: ServerInfo;
  private liveScoped: RealtimeConnection | undefined;
  private liveAdmin: RealtimeConnection | undefined;

  constructor(options: ClientOptions) {
    this.core = new RequestCore(options);
    this.options = this.core.options;
    this.serverURL = this.core.serverURL;
    this.applicationId = this.core.applicationId;
    this.info = new ServerInfo(this.core);
  }

  /** A client that acts as the user holding `token` (lowest-priority credential). */
  withSessionToken(token: string): Client {
    return new Client({ ...this.options, sessionToken: token });
  }

  /** The token bound to this client, if any. */
  get sessionToken(): string | null {
    return this.core.boundToken;
  }

  /** True when a master key is configured and client mode is off. */
  get canUseMasterKey(): boolean {
    return this.core.canUseMasterKey;
  }

  /**
   * Credential resolution: explicit `sessionToken` (a blank one means anonymous) or
   * `useMasterKey: true` wins; then the ambient session; then the bound token; then, with no
   * preference (`useMasterKey` undefined) and `defaultMaster`, the configured master key.
   */
  resolveAuth(options: AuthOptions = {}, defaultMaster = true): ResolvedAuth {
    return this.core.resolveAuth(options, defaultMaster);
  }

  /** The headers a call with these options sends. */
  headersFor(auth: ResolvedAuth, installationId?: string): Record<string, string> {
    return this.core.headersFor(auth, installationId);
  }

  /** Clears the response cache. */
  clearCache(): void {
    this.core.clearCache();
  }

  /**
   * Sends one request. HTTP-level failures (401, 403, 5xx, network) and invalid sessions throw;
   * protocol errors come back as `{success: false, code, error}`.
   */
  request<T = any>(
    method: string,
    path: string,
    options: RequestOptions = {},
    defaultMaster = true,
  ): Promise<Result<T>> {
    return this.core.request<T>(method, path, options, defaultMaster);
  }

  // ---- records -------------------------------------------------------------------------------

  static pathFor(className: string, objectId?: string): string {
    return records.recordPath(className, objectId);
  }

  async find<T = any>(className: string, params: QueryParams = {}, options: AuthOptions = {}) {
    return records.find<T>(this.core, className, params, options);
  }

  async get<T = any>(
    className: string,
    objectId: string,
    options: AuthOptions & { include?: string; keys?: string } = {},
  ) {
    return records.get<T>(this.core, className, objectId, options);
  }

  async create<T = any>(className: string, fields: Record<string, unknown>, options: AuthOptions = {}) {
    return records.create<T>(this.core, className, fields, options);
  }

  async update<T = any>(
    className: string,
    objectId: string,
    fields: Record<string, unknown>,
    options: AuthOptions = {},
  ) {
    return records.update<T>(this.core, className, objectId, fields, options);
  }

  async destroy(className: string, objectId: string, options: AuthOptions = {}) {
    return records.destroy(this.core, className, objectId, options);
  }

  /** POST /batch with at most `BATCH_SEGMENT` sub-requests per call; answers are concatenated in order. */
  async batch(requests: BatchRequest[], options: AuthOptions = {}): Promise<Result<BatchItem[]>> {
    return records.batch(this.core, requests, options);
  }

  /** POST /aggregate/<C> (master only): `{results}`. */
  async aggregate<T = any>(
    className: string,
    pipeline: Array<Record<string, unknown>>,
    options: AuthOptions = {},
  ) {
    return records.aggregate<T>(this.core, className, pipeline, options);
  }

  // ---- users ---------------------------------------------------------------------------------

  /** Raw login: an unsuccessful response carries the server's text on bad credentials. */
  async login(username: string, password: string, options: AuthOptions = {}) {
    return accounts.login(this.core, username, password, options);
  }

  async signUp(fields: Record<string, unknown>, options: AuthOptions = {}) {
    return accounts.signUp(this.core, fields, options);
  }

  /** GET /users/me; throws InvalidSessionError for a revoked or bogus token. */
  async me(options: AuthOptions = {}) {
    return accounts.me(this.core, options);
  }

  /** POST /logout: revokes the session token the call resolves to. */
  async logout(options: AuthOptions = {}) {
    return accounts.logout(this.core, options);
  }

  // ---- config, functions, jobs, push, events -------------------------------------------------

  async getConfig(options: AuthOptions = {}) {
    return config.getConfig(this.core, options);
  }

  /** Calls a cloud function (POST /functions/<name>); answers `null` on failure. */
  async callFunction<T = any>(name: string, params: Record<string, unknown> = {}, options: AuthOptions = {}) {
    return cloud.callFunction<T>(this.core, name, params, options);
  }

  /** Calls a cloud function; throws CloudCodeError carrying the response on failure. */
  async callFunctionOrThrow<T = any>(
    name: string,
    params: Record<string, unknown> = {},
    options: AuthOptions = {},
  ) {
    return cloud.callFunctionOrThrow<T>(this.core, name, params, options);
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
    return cloud.runJob(this.core, name, params, options);
  }

  /** A job's `_JobStatus` row (master key: the class is master-only). */
  async jobStatus(statusId: string, options: AuthOptions = {}) {
    return cloud.jobStatus(this.core, statusId, options);
  }

  /**
   * Polls a job's status until it is no longer `running` and answers the row; throws when
   * `timeoutMs` passes first (default 60 s) or the row cannot be read.
   */
  async waitForJob(
    statusId: string,
    options: AuthOptions & { intervalMs?: number; timeoutMs?: number } = {},
  ): Promise<JobStatus> {
    return cloud.waitForJob(this.core, statusId, options);
  }

  /** POST /push. Refused locally (no request) unless this client holds a usable master key. */
  async sendPush(
    payload: { where?: Record<string, unknown>; channels?: string[]; data: Record<string, unknown> } & Record<
      string,
      unknown
    >,
    options: AuthOptions = {},
  ) {
    return push.sendPush(this.core, payload, options);
  }

  /** POST /events/<name>. The name must match the protocol's EVENT_NAME_PATTERN. */
  async trackEvent(
    name: string,
    dimensions: Record<string, string> = {},
    at?: Date | string,
    options: AuthOptions = {},
  ) {
    return analytics.trackEvent(this.core, name, dimensions, at, options);
  }

  // ---- files -----------------------------------------------------------------------------------

  /**
   * POST /files/<name>: the bytes stream to the service (a Node Readable or web ReadableStream is
   * never read into memory). Answers `{name, url}`; put `{__type: 'File', name}` on a record (the
   * service refuses any other name there, and builds the url when the row is read).
   */
  async uploadFile(name: string, data: FileBody, options: AuthOptions & { contentType?: string } = {}) {
    return files.uploadFile(this.core, name, data, options);
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
    return files.downloadFile(this.core, file, options);
  }

  /** A stored file's bytes as a Blob (browsers; small files in Node); the same rules as downloadFile. */
  async downloadBlob(file: string | { url?: string; name: string }): Promise<Result<Blob>> {
    return files.downloadBlob(this.core, file);
  }

  /** DELETE /files/<name> (master only). */
  async deleteFile(name: string, options: AuthOptions = {}) {
    return files.deleteFile(this.core, name, options);
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
    return this.info.read();
  }

  /** The server's features block (`{}` when unavailable). */
  async serverFeatures(): Promise<Record<string, unknown>> {
    return this.info.features();
  }

  /**
   * Whether the server supports `feature` (a dot path into the features block, e.g.
   * `batch.transaction`). Without server information, a modern server is assumed (true).
   */
  async serverSupports(feature: string): Promise<boolean> {
    return this.info.supports(feature);
  }
}

export function createClient(options: ClientOptions): Client {
  return new Client(options);
}
