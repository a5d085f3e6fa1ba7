import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import { type Auth, MASTER } from '../data/auth.ts';
import type { Core } from '../data/core.ts';
import { authForSession } from '../data/sessions.ts';
import { BdsError, ErrorCode, toBdsError } from '../errors.ts';
import { badMethod, checkKeys, credentialsFromHeaders, liftBodyCredentials } from './credentials.ts';
import type { ApiResponse, Method, Router } from './router.ts';

const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE']);
const CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE, OPTIONS',
  'Access-Control-Allow-Headers':
    'Content-Type, X-Backend-Application-Id, X-Backend-REST-API-Key, X-Backend-JavaScript-Key, X-Backend-Client-Key, X-Backend-Master-Key, X-Backend-Session-Token, X-Backend-Installation-Id, X-Backend-Request-Id, X-Parse-Application-Id, X-Parse-REST-API-Key, X-Parse-Javascript-Key, X-Parse-Client-Key, X-Parse-Master-Key, X-Parse-Session-Token, X-Parse-Installation-Id, X-Parse-Request-Id',
  'Access-Control-Expose-Headers': 'X-Backend-Job-Status-Id, X-Backend-Push-Status-Id, Location',
  'Access-Control-Max-Age': '86400',
};

export interface AppState {
  ready: boolean;
  inFlight: number;
  /** Pages served without keys (the links in account mails, under /apps/); answers whether it handled one. */
  pages?: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;
}

function send(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  const out: Record<string, string | number> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Access-Control-Allow-Origin': '*',
    ...headers,
  };
  res.writeHead(status, out);
  res.end(text);
}

function sendError(res: ServerResponse, err: unknown, headers?: Record<string, string>): void {
  const e = toBdsError(err);
  if (e.code === ErrorCode.INTERNAL_SERVER_ERROR && !(err instanceof BdsError)) {
    // Logged for the operator without request data (which may hold secrets); never sent to the caller.
    console.error('[bds] unexpected error:', err instanceof Error ? err.stack : String(err));
  }
  send(res, e.httpStatus, e.toJSON(), headers);
}

/** Reads the request body up to the limit; a larger body is a 413 with code 116. */
const EMPTY = Buffer.alloc(0);

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  // Most GETs carry no body: answer at once instead of waiting for the stream's end event.
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
    return Promise.resolve(EMPTY);
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge(limit));
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
  try {
    return JSON.parse(buffer.toString('utf8'));
  } catch {
    throw new BdsError(ErrorCode.INVALID_JSON, 'The request body is not valid JSON.');
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
export function buildApp(core: Core, router: Router, state: AppState): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const handler = createHandler(core, router, state);
  app.use((req, res) => handler(req, res));
  return app;
}

/**
 * The request handler behind the app: reads, authenticates, and dispatches through the router.
 * It needs nothing from Express, so `listen` serves the mount path with it directly (Express in
 * front of it costs more CPU than a primary-key read).
 */
export function createHandler(core: Core, router: Router, state: AppState): RequestHandler {
  const resolveAuth = async (creds: ReturnType<typeof credentialsFromHeaders>): Promise<Auth> => {
    const { master } = checkKeys(creds, core.options);
    const installationId = creds.installationId ?? null;
    if (master) return installationId ? { ...MASTER, installationId } : MASTER;
    if (creds.sessionToken !== undefined) return authForSession(core, creds.sessionToken, installationId);
    return { isMaster: false, user: null, sessionToken: null, installationId };
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS_HEADERS);
      res.end();
      return;
    }
    if (path === '/health' && req.method === 'GET') {
      send(res, state.ready ? 200 : 503, { status: state.ready ? 'ok' : 'starting' });
      return;
    }
    try {
      if (state.pages && path.startsWith('/apps/') && (await state.pages(req, res, path))) return;
      const raw = await readBody(req, core.options.maxUploadSize);
      let body = parseJson(raw);
      const creds = credentialsFromHeaders(req.headers);
      let method = req.method ?? '';
      let query = parseQuery(url);
      if (method === 'POST' && body !== null && typeof body === 'object' && !Array.isArray(body)) {
        const lifted = liftBodyCredentials(body as Record<string, unknown>, creds);
        body = lifted.body;
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
      const auth = await resolveAuth(creds);
      const response: ApiResponse = await router.dispatch({
        method: method as Method,
        path,
        query,
        body: method === 'GET' || method === 'DELETE' ? (body ?? undefined) : body,
        auth,
        inBatch: false,
      });
      send(res, response.status ?? 200, response.body, response.headers);
    } catch (err) {
      const headers =
        err instanceof BdsError && err.code === ErrorCode.OBJECT_TOO_LARGE
          ? { Connection: 'close' }
          : undefined;
      sendError(res, err, headers);
    }
  }

  return async (req, res) => {
    state.inFlight++;
    try {
      await handle(req, res);
    } finally {
      state.inFlight--;
    }
  };
}
