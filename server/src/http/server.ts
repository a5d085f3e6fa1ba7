import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ErrorCode } from '../kernel/errors.ts';
import { CORS_ANSWER_HEADERS } from './cors.ts';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;
/** An HTTP upgrade (WebSocket): answers whether it took the socket. */
type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** What a request gets while the store opens and migrates: 503, `{"status":"starting"}` at /health. */
const starting: Listener = (req, res) => {
  const health = (req.url ?? '').split('?')[0]!.endsWith('/health');
  const body = JSON.stringify(
    health
      ? { status: 'starting' }
      : { code: ErrorCode.CONNECTION_FAILED, error: 'The service is starting; retry shortly.' },
  );
  res.writeHead(503, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Retry-After': '1',
    ...CORS_ANSWER_HEADERS,
  });
  res.end(body);
};

/** Node's largest request line plus headers (its `maxHeaderSize`, 16 KB). */
const MAX_HEADER_BYTES = 16 * 1024;

/**
 * The service's HTTP server. It can listen before the service is ready (answering 503 until then;
 * `serve()` in index.ts does), and answers requests Node itself refuses (a request line and
 * headers over 16 KB, malformed HTTP) with the protocol's JSON error shape instead of an empty
 * body.
 */
export function createHttpServer(): {
  server: Server;
  handle(listener: Listener): void;
  /** Who takes upgrade requests (realtime); until then, and for paths nobody takes, 404 and close. */
  upgrade(listener: UpgradeListener): void;
} {
  let current = starting;
  let upgrades: UpgradeListener | undefined;
  const server = createServer((req, res) => current(req, res));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    let taken = false;
    try {
      taken = upgrades?.(req, socket, head) ?? false;
    } catch {
      taken = false;
    }
    if (taken) return;
    const status = upgrades ? '404 Not Found' : '503 Service Unavailable';
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  });
  server.keepAliveTimeout = 65_000;
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
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return {
    server,
    handle(listener) {
      current = listener;
    },
    upgrade(listener) {
      upgrades = listener;
    },
  };
}
