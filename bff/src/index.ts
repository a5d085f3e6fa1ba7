import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { enableRealtime } from '@bds/client';
import { ErrorCode } from '@bds/client/protocol';
import express, { type ErrorRequestHandler, type Express, type Router } from 'express';
import type { DestinationStream, Logger } from 'pino';
import { createAppRegistry } from './apps.ts';
import { openAuditLog } from './audit/index.ts';
import type { AuditLog, BffContext } from './context.ts';
import { sendError } from './errors.ts';
import { createLogger, requestLogger } from './logger.ts';
import { type BffOptions, type BffOptionsInput, validateBffOptions } from './options.ts';
import { registerApiRoutes as defaultApiRoutes } from './routes/index.ts';
import { closeLogTails } from './routes/logs.ts';
import { closeRealtimeStreams } from './routes/realtime.ts';
import { openSavedFilters } from './saved-filters.ts';
import { appAccessGuard, csrfGuard, noStore, readOnlyGuard, securityHeaders } from './security.ts';
import { createSessions } from './session.ts';
import { serveSpa } from './static.ts';

export type { AppRegistry, AuditLog, BffContext, ConsoleUser } from './context.ts';
export type { BffOptions, BffOptionsInput } from './options.ts';
export { loadBffOptions, OptionError, validateBffOptions } from './options.ts';

export type RegisterApiRoutes = (router: Router, ctx: BffContext) => void | Promise<void>;

export interface BffDeps {
  /** Defaults to `openAuditLog(dataDir)` from ./audit/index.ts. */
  audit?: AuditLog;
  /** Defaults to `registerApiRoutes` from ./routes/index.ts. */
  registerApiRoutes?: RegisterApiRoutes;
  /** Where log lines go (default stdout). */
  logStream?: DestinationStream;
  /** The console sessions' clock (idle and absolute timeouts, login throttle); default Date.now. */
  now?: () => number;
}

export interface Bff {
  app: Express;
  options: BffOptions;
  ctx: BffContext;
  logger: Logger;
  listen(port?: number, host?: string): Promise<{ url: string; port: number; server: Server }>;
  close(): Promise<void>;
}

/** Node's largest request line plus headers (its default `maxHeaderSize`). */
const MAX_HEADER_BYTES = 16 * 1024;

/**
 * Requests Node refuses before Express sees them (request line and headers over 16 KB, malformed
 * HTTP) get the bff's `{code, error}` shape instead of Node's empty 431 or 400.
 */
function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const body = JSON.stringify(
      tooLarge
        ? {
            code: ErrorCode.OBJECT_TOO_LARGE,
            error: `The request line and headers exceed the limit of ${MAX_HEADER_BYTES} bytes.`,
          }
        : { code: ErrorCode.INVALID_JSON, error: 'The request is not valid HTTP.' },
    );
    const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

const bodyErrors: ErrorRequestHandler = (err, _req, res, next) => {
  if (err?.type === 'entity.parse.failed')
    return sendError(res, 400, ErrorCode.INVALID_JSON, 'Invalid JSON body.');
  if (err?.type === 'entity.too.large')
    return sendError(res, 413, ErrorCode.INVALID_JSON, 'Request body too large.');
  next(err);
};

/**
 * The console's backend-for-frontend: sessions and security middleware around the API routes,
 * plus the built SPA. Mount order on /bff/: no-store, JSON body, CSRF, login/logout/session, the
 * session check, read-only enforcement, sign out everywhere, per-app access, then the API routes.
 */
export async function createBff(input: BffOptionsInput | BffOptions, deps: BffDeps = {}): Promise<Bff> {
  const options = validateBffOptions(input);
  const apps = createAppRegistry(options.apps);
  const logger = createLogger(apps.secrets(), options.logLevel, deps.logStream);

  const ownAudit = !deps.audit;
  const audit = deps.audit ?? openAuditLog(options.dataDir);
  const registerApiRoutes = deps.registerApiRoutes ?? defaultApiRoutes;
  const filters = openSavedFilters(options.dataDir);
  const sessions = createSessions(options, deps.now, {
    info: (message) => logger.info(message),
    error: (message) => logger.error(message),
  });
  const ctx: BffContext = { apps, audit, filters, sessions };
  // The realtime inspector opens the client library's realtime connections (off until enabled).
  enableRealtime();

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.use(requestLogger(logger));
  app.use(securityHeaders());

  const bff = express.Router();
  bff.use(noStore);
  bff.use(express.json({ limit: '20mb' }));
  bff.use(bodyErrors);
  bff.use(csrfGuard);
  sessions.registerRoutes(bff);
  bff.use(sessions.requireUser);
  bff.use(readOnlyGuard);
  sessions.registerAdminRoutes(bff);
  bff.use('/apps/:appId', appAccessGuard);
  await registerApiRoutes(bff, ctx);
  bff.use((_req, res) => sendError(res, 404, ErrorCode.INVALID_JSON, 'No such console route.'));
  app.use('/bff', bff);

  serveSpa(app, options.webDist);

  const errors: ErrorRequestHandler = (err, req, res, _next) => {
    const status =
      typeof err?.status === 'number' && err.status >= 400 && err.status < 500 ? err.status : 500;
    if (status === 500) logger.error({ err, method: req.method, path: req.path }, 'unhandled error');
    if (res.headersSent) return;
    if (status === 404) return sendError(res, 404, ErrorCode.INVALID_JSON, 'Not found.');
    if (status === 500) return sendError(res, 500, ErrorCode.INTERNAL_SERVER_ERROR, 'Internal server error.');
    sendError(res, status, ErrorCode.INVALID_JSON, 'Bad request.');
  };
  app.use(errors);

  const servers = new Set<Server>();
  let closed = false;
  return {
    app,
    options,
    ctx,
    logger,
    async listen(port = options.port, host = options.host) {
      const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, app);
      answerClientErrors(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      servers.add(server);
      const actual = (server.address() as AddressInfo).port;
      const shown =
        host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
      return { url: `http://${shown}:${actual}`, port: actual, server };
    },
    async close() {
      if (closed) return;
      closed = true;
      // Inspector streams never end on their own: end them so the servers can close.
      await closeRealtimeStreams(ctx);
      closeLogTails(ctx);
      await Promise.all(
        [...servers].map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeIdleConnections();
            }),
        ),
      );
      if (ownAudit) audit.close();
      filters.close();
      sessions.close();
    },
  };
}
