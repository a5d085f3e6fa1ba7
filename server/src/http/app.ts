import type { IncomingMessage, ServerResponse } from 'node:http';
import { CONSOLE_USER_HEADER, isObject, TRACE_HEADER } from '@bds/client/protocol';
import express from 'express';
import type { CallerResolver } from '../auth/caller.ts';
import type { Core } from '../data/core.ts';
import { withConsoleUser } from '../data/versions.ts';
import { anonymous, type Caller, MASTER } from '../kernel/caller.ts';
import { clientAddressOf } from '../kernel/client-address.ts';
import { type Ctx, ctxOf, headersOf } from '../kernel/context.ts';
import { BdsError, ErrorCode, toBdsError, unauthorized } from '../kernel/errors.ts';
import { type Logger, writeRequestLine } from '../kernel/log.ts';
import { traceIdOf } from '../kernel/trace.ts';
import { jsonProblem } from '../kernel/validate.ts';
import type { RequestLogs } from '../logs/request-logs.ts';
import { answerAtEndOfTurn } from './answers.ts';
import { CORS_ANSWER_HEADERS, CORS_PREFLIGHT_HEADERS } from './cors.ts';
import { badMethod, checkKeys, credentialsFromHeaders, liftBodyCredentials } from './credentials.ts';
import { RateLimited, type RateLimiter } from './rate-limit.ts';
import { type ApiResponse, type Method, type Router, requestPath } from './router.ts';

/** Node's (lower-case) name of the console user header. */
const CONSOLE_USER = CONSOLE_USER_HEADER.toLowerCase();

const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE']);

/**
 * A route whose body is a file (an upload). In the raw form (credentials in headers) the request's
 * body streams to it; a request without an application id header is the SDKs' JSON form
 * (credentials and the file's base64 in a JSON body), read and lifted like any `_method` body.
 */
export interface UploadRoute {
  raw(req: IncomingMessage, ctx: Ctx): Promise<ApiResponse>;
  /** The JSON body without its credentials, and the content type it names (`_ContentType`) or the request's. */
  json(body: unknown, contentType: string | undefined, ctx: Ctx): Promise<ApiResponse>;
  /** The most bytes a body of the JSON form may have, and the refusal of a larger one. */
  jsonLimit: number;
  tooLarge(): BdsError;
}

/** Every hook below gets the path below the mount path in its normal form (router.ts `requestPath`). */
export interface AppState {
  ready: boolean;
  inFlight: number;
  /** Pages served without keys (the links in account mails, under /apps/); answers whether it handled one. */
  pages?: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;
  /**
   * Answers served without keys (file downloads): the status once it handled the request, or
   * undefined at once (no promise to wait for) when the request is not one of them.
   */
  open?: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<number | undefined> | undefined;
  /** Uploads: credentials and the caller are checked as for any request first. */
  uploads?: (method: string, path: string) => UploadRoute | undefined;
  /**
   * Runs before a request is dispatched, with the method it is routed as (`_method` applied) and
   * once its caller is known (idempotency claims the request id here).
   */
  beforeDispatch?: (req: IncomingMessage, method: string, path: string) => Promise<void> | undefined;
}

/**
 * A JSON answer. Its request id goes in the one object given to writeHead: a header set before with
 * setHeader sends Node down writeHead's slow path (every header set again, one by one).
 */
function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> | undefined,
  requestId: string,
): void {
  const text = JSON.stringify(body);
  const out: Record<string, string | number> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...CORS_ANSWER_HEADERS,
    ...headers,
    [TRACE_HEADER]: requestId,
  };
  res.writeHead(status, out);
  answerAtEndOfTurn(res, text);
}

/** What the request log line says of an answer. */
interface Outcome {
  status: number;
  code?: number;
  caller?: Caller;
}

function respond(res: ServerResponse, response: ApiResponse, caller: Caller, requestId: string): Outcome {
  const status = response.status ?? 200;
  send(res, status, response.body, response.headers, requestId);
  return { status, caller };
}

/**
 * `GET /health`, also as the SDKs' offline queue asks it (a POST with `_method: "GET"`): no keys
 * needed, 503 until the store is ready.
 */
function health(res: ServerResponse, ready: boolean, requestId: string): Outcome {
  const status = ready ? 200 : 503;
  send(res, status, { status: ready ? 'ok' : 'starting' }, undefined, requestId);
  return { status };
}

const isHealth = (method: string, path: string) => method === 'GET' && path === '/health';

function sendError(
  log: Logger,
  res: ServerResponse,
  err: unknown,
  headers: Record<string, string> | undefined,
  requestId: string,
): Outcome {
  const e = toBdsError(err);
  if (e.code === ErrorCode.INTERNAL_SERVER_ERROR && !(err instanceof BdsError)) {
    // Logged for the operator without request data (which may hold secrets); never sent to the caller.
    log.error({ err: err instanceof Error ? err.stack : String(err) }, 'unexpected error');
  }
  send(res, e.httpStatus, e.toJSON(), headers, requestId);
  return { status: e.httpStatus, code: e.code };
}

/** Reads the request body up to the limit; a larger body is refused (413, by default with code 116). */
const EMPTY = Buffer.alloc(0);

function readBody(req: IncomingMessage, limit: number, refusal = () => tooLarge(limit)): Promise<Buffer> {
  // Most GETs carry no body: answer at once instead of waiting for the stream's end event.
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
    return Promise.resolve(EMPTY);
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(refusal());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(refusal());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function tooLarge(limit: number): BdsError {
  return new BdsError(
    ErrorCode.OBJECT_TOO_LARGE,
    `The request body exceeds the limit of ${limit} bytes.`,
    413,
  );
}

function parseJson(buffer: Buffer): unknown {
  if (buffer.length === 0) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(buffer.toString('utf8'));
  } catch {
    throw new BdsError(ErrorCode.INVALID_JSON, 'The request body is not valid JSON.');
  }
  const problem = jsonProblem(body);
  if (problem) throw new BdsError(ErrorCode.INVALID_JSON, `The request body ${problem}.`);
  return body;
}

/**
 * The body of an upload without an application id header: the JSON form, which carries the
 * credentials. Any other body is an upload without credentials.
 */
function jsonForm(buffer: Buffer): unknown {
  try {
    return parseJson(buffer);
  } catch {
    throw unauthorized();
  }
}

function parseQuery(url: string): Record<string, unknown> {
  const q = url.indexOf('?');
  if (q < 0) return {};
  const query: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) query[k] = v;
  return query;
}

/** A request handler on plain node:http objects. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The service's Express app: one handler that reads, authenticates, and dispatches through the router. */
export function buildApp(handler: RequestHandler): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req, res) => handler(req, res));
  return app;
}

/**
 * The request handler behind the app: reads, authenticates, and dispatches through the router.
 * It needs nothing from Express, so `listen` serves the mount path with it directly (Express in
 * front of it costs more CPU than a primary-key read).
 */
export function createHandler(
  core: Core,
  callers: CallerResolver,
  router: Router,
  state: AppState,
  limiter?: RateLimiter,
  /** Where request lines are kept for GET /logs (option `requestLogSize`), unless it is 0. */
  logs?: RequestLogs,
): RequestHandler {
  const { log } = core;
  const addressOf = clientAddressOf(core.options.trustProxy);
  /** The client's address (kernel/client-address.ts, option `trustProxy`). */
  const clientIp = (req: IncomingMessage) =>
    addressOf(req.socket.remoteAddress, req.headers['x-forwarded-for']);
  /** The request's trace id (kernel/trace.ts): a trusted proxy's `X-Request-Id`, else a new one. */
  const traceOf = traceIdOf(core.options.trustProxy);

  /**
   * Who a request served without keys (a page, a download) is for the rate limits: the master
   * key, when it is sent and right, is never limited; anyone else is counted by address.
   */
  function keylessCaller(req: IncomingMessage): Caller {
    const creds = credentialsFromHeaders(req.headers);
    if (creds.masterKey === undefined) return anonymous();
    try {
      return checkKeys(creds, core.options).master ? MASTER : anonymous();
    } catch {
      return anonymous();
    }
  }

  /** The keys checked (constant time) and the caller resolved: the same for every kind of request. */
  function identify(creds: ReturnType<typeof credentialsFromHeaders>): Caller | Promise<Caller> {
    const { master } = checkKeys(creds, core.options);
    return callers.resolve({
      master,
      sessionToken: creds.sessionToken,
      installationId: creds.installationId,
    });
  }

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    written: string,
    requestId: string,
  ): Promise<Outcome> {
    const url = req.url ?? '/';
    if (req.method === 'OPTIONS') {
      res.setHeader(TRACE_HEADER, requestId);
      res.writeHead(204, CORS_PREFLIGHT_HEADERS);
      res.end();
      return { status: 204 };
    }
    let caller: Caller | undefined;
    let streaming = false;
    try {
      // The one normal form: pages, downloads, uploads, idempotency, the rate limits and the router
      // see only it, so no spelling of a path gets past a rule that the router then dispatches.
      const path = requestPath(written);
      if (isHealth(req.method ?? '', path)) return health(res, state.ready, requestId);
      const upload = state.uploads?.(req.method ?? '', path);
      // Pages and downloads are served without keys and no route of the router has their paths:
      // they are counted here, by address, when a rule names them (routed requests are counted by
      // the router, uploads below once their caller is known).
      if (!upload && limiter?.names(req.method ?? '', path) && !router.has(path)) {
        const waiting = limiter.check({
          method: req.method ?? '',
          path,
          ctx: ctxOf(keylessCaller(req), 'rest', clientIp(req)),
        });
        if (waiting) await waiting;
      }
      if (state.pages && path.startsWith('/apps/')) {
        // Pages and downloads write their own heads: the request id is set on the answer first.
        res.setHeader(TRACE_HEADER, requestId);
        if (await state.pages(req, res, path)) return { status: res.statusCode };
      }
      const opened = state.open?.(req, res, path);
      // A download writes its head after an await at the least: set before that.
      if (opened !== undefined) res.setHeader(TRACE_HEADER, requestId);
      const served = opened === undefined ? undefined : await opened;
      if (served !== undefined) return { status: served };
      const creds = credentialsFromHeaders(req.headers);
      if (upload && creds.applicationId !== undefined) {
        // The raw form: the body streams to the upload once the caller is known.
        streaming = true;
        caller = await identify(creds);
        const ctx = ctxOf(caller, 'rest', clientIp(req), headersOf(req.headers), requestId);
        const waiting = limiter?.check({ method: 'POST', path, ctx });
        if (waiting) await waiting;
        await state.beforeDispatch?.(req, 'POST', path);
        return respond(res, await upload.raw(req, ctx), caller, requestId);
      }
      let body = upload
        ? jsonForm(await readBody(req, upload.jsonLimit, upload.tooLarge))
        : parseJson(await readBody(req, core.options.maxUploadSize));
      let method = req.method ?? '';
      let query = parseQuery(url);
      let contentType = req.headers['content-type'];
      if (method === 'POST' && isObject(body)) {
        const lifted = liftBodyCredentials(body, creds);
        body = lifted.body;
        contentType = lifted.contentType ?? contentType;
        if (lifted.method !== undefined) {
          if (!METHODS.has(lifted.method)) throw badMethod(lifted.method);
          method = lifted.method;
          if (method === 'GET') {
            query = { ...query, ...lifted.body };
            body = undefined;
          }
        }
      }
      if (!METHODS.has(method))
        throw new BdsError(ErrorCode.INVALID_JSON, `Method ${method} is not supported.`, 405);
      if (isHealth(method, path)) return health(res, state.ready, requestId);
      // Awaited only when there is something to wait for: most requests need no lookup.
      const identified = identify(creds);
      caller = identified instanceof Promise ? await identified : identified;
      const ctx = withConsoleUser(
        ctxOf(caller, 'rest', clientIp(req), headersOf(req.headers), requestId),
        req.headers[CONSOLE_USER],
      );
      if (upload && method === 'POST') {
        // The JSON form of an upload: counted and claimed as the raw form is.
        const waiting = limiter?.check({ method, path, ctx });
        if (waiting) await waiting;
        await state.beforeDispatch?.(req, method, path);
        return respond(res, await upload.json(body, contentType, ctx), caller, requestId);
      }
      const claimed = state.beforeDispatch?.(req, method, path);
      if (claimed) await claimed;
      const response: ApiResponse = await router.dispatch({
        method: method as Method,
        path,
        query,
        body: method === 'GET' || method === 'DELETE' ? (body ?? undefined) : body,
        ctx,
        inBatch: false,
      });
      return respond(res, response, caller, requestId);
    } catch (err) {
      // A refused body is not read to its end (413): the connection cannot carry another request.
      const closing = streaming || (err instanceof BdsError && err.httpStatus === 413);
      const headers: Record<string, string> | undefined =
        err instanceof RateLimited
          ? { 'Retry-After': String(err.retryAfter), ...(closing ? { Connection: 'close' } : {}) }
          : closing
            ? { Connection: 'close' }
            : undefined;
      if (res.headersSent) {
        res.destroy();
        return { status: res.statusCode, caller };
      }
      return { ...sendError(log, res, err, headers, requestId), caller };
    }
  }

  return async (req, res) => {
    state.inFlight++;
    const started = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    // The path only, as written: a query string may carry a password (GET /login).
    const path = q < 0 ? url : url.slice(0, q);
    const requestId = traceOf(req.socket.remoteAddress, req.headers['x-request-id']);
    try {
      const outcome = await handle(req, res, path, requestId);
      // One object for the log line and the kept line: nothing else is made per request.
      const line = {
        method: req.method,
        path,
        status: outcome.status,
        code: outcome.code,
        ms: Math.round((performance.now() - started) * 100) / 100,
        caller: outcome.caller?.kind,
        user: outcome.caller?.user?.objectId,
        requestId,
        at: Date.now(),
      };
      writeRequestLine(log, line);
      logs?.keepRequest(line);
    } finally {
      state.inFlight--;
    }
  };
}
