/**
 * Realtime's connections: one record per client WebSocket (model.ts `Connection`), the frames it
 * sends (size and text checked, then handled one after the other, so its answers come in frame
 * order) and the frames it is sent (answers at once, event frames corked until the end of the turn),
 * the heartbeat, the idle close, and the close of every connection at shutdown. What a frame asks
 * is the handler's (LiveQuery, server.ts); this file never looks inside a subscription.
 */
import { LiveCode, LiveText, type RequestId } from '@bds/client/protocol';
import type { RawData, WebSocket } from 'ws';
import type { Logger } from '../kernel/log.ts';
import { type ErrorFrame, errorFrame, FrameError, parseFrame, requestIdOf } from './frames.ts';
import type { Connection, LiveOptions } from './model.ts';

/** A client frame once parsed: a JSON object with an `op`. */
export type ClientFrame = ReturnType<typeof parseFrame>;

/** What the connections ask of the rest of realtime. */
export interface ConnectionHandler {
  /** Handles one frame of a connection; what it throws is answered as an error frame. */
  handleFrame(conn: Connection, frame: ClientFrame): Promise<void>;
  /** The connection is gone: everything of it leaves the registry. */
  connectionClosed(conn: Connection): void;
}

/** A connection past this many bytes waiting to be sent is dropped (a client that does not read). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export class Connections {
  /** Every open connection. */
  readonly all = new Set<Connection>();
  /** Connections whose socket is corked until the end of this turn (sendEvent). */
  private readonly corked = new Set<Connection>();
  private nextClientId = 1;
  private readonly timers: NodeJS.Timeout[] = [];
  private closing = false;

  constructor(
    private readonly opts: LiveOptions,
    private readonly log: Logger,
    private readonly handler: ConnectionHandler,
  ) {
    if (opts.pingIntervalMs > 0) {
      this.timers.push(setInterval(() => this.checkHeartbeats(), opts.pingIntervalMs).unref());
    }
    if (opts.idleTimeoutMs > 0) {
      const every = Math.max(10, Math.min(opts.idleTimeoutMs / 4, 30_000));
      this.timers.push(setInterval(() => this.closeIdle(), every).unref());
    }
  }

  /** A WebSocket the upgrade accepted becomes a connection (closed at once while shutting down). */
  open(ws: WebSocket, ip: string | null): void {
    if (this.closing) {
      ws.close(1001, LiveText.shuttingDown);
      return;
    }
    const conn: Connection = {
      id: this.nextClientId++,
      ws,
      connected: false,
      master: false,
      sessionToken: undefined,
      installationId: null,
      ip,
      subs: new Map(),
      lastFrameAt: Date.now(),
      alive: true,
      closed: false,
      frameQueue: Promise.resolve(),
      connecting: false,
    };
    this.all.add(conn);
    ws.on('pong', () => {
      conn.alive = true;
    });
    ws.on('message', (data, isBinary) => this.receive(conn, data, isBinary));
    ws.on('error', () => this.removeConnection(conn));
    ws.on('close', () => this.removeConnection(conn));
  }

  /** Sends a frame (an object, or its JSON text); a client that stopped reading is dropped instead. */
  send(conn: Connection, frame: unknown): void {
    if (conn.closed || conn.ws.readyState !== conn.ws.OPEN) return;
    if (conn.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.log.warn({ clientId: conn.id }, 'realtime client does not read its events; dropped');
      conn.ws.terminate();
      this.removeConnection(conn);
      return;
    }
    conn.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /**
   * An event frame: the connection's socket is corked until the end of this turn of the event
   * loop, so the frames of a fan-out to one connection leave in one write instead of one each.
   */
  sendEvent(conn: Connection, frame: unknown): void {
    if (!this.corked.has(conn) && !conn.closed && conn.ws.readyState === conn.ws.OPEN) {
      const socket = socketOf(conn.ws);
      if (socket) {
        socket.cork();
        this.corked.add(conn);
        if (this.corked.size === 1) setImmediate(this.uncorkAll);
      }
    }
    this.send(conn, frame);
  }

  sendError(conn: Connection, frame: ErrorFrame): void {
    this.send(conn, frame);
  }

  /**
   * The connection is gone (closed, failed, dropped): it leaves the set, and the handler removes
   * everything of it. Its socket hears nothing more.
   */
  private removeConnection(conn: Connection): void {
    if (conn.closed) return;
    conn.closed = true;
    this.handler.connectionClosed(conn);
    conn.subs.clear();
    this.all.delete(conn);
    conn.ws.removeAllListeners('message');
    conn.ws.removeAllListeners('pong');
  }

  /** Sends every connection a close frame (1001), waits up to `graceMs` for the handshakes, then removes them all. */
  async closeAll(graceMs: number): Promise<void> {
    this.closing = true;
    for (const timer of this.timers) clearInterval(timer);
    const conns = [...this.all];
    const closed = conns.map(
      (conn) =>
        new Promise<void>((resolve) => {
          if (conn.ws.readyState === conn.ws.CLOSED) return resolve();
          conn.ws.once('close', () => resolve());
          conn.ws.close(1001, LiveText.shuttingDown);
        }),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(closed),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
    for (const conn of conns) {
      if (conn.ws.readyState !== conn.ws.CLOSED) conn.ws.terminate();
      this.removeConnection(conn);
    }
  }

  private readonly uncorkAll = (): void => {
    for (const conn of this.corked) socketOf(conn.ws)?.uncork();
    this.corked.clear();
  };

  /** A frame from the client: too large (155) or binary (1) is answered at once; the rest is queued. */
  private receive(conn: Connection, data: RawData, isBinary: boolean): void {
    conn.lastFrameAt = Date.now();
    const bytes = Array.isArray(data)
      ? data.reduce((n, b) => n + b.length, 0)
      : data instanceof ArrayBuffer
        ? data.byteLength
        : data.length;
    if (bytes > this.opts.maxFrameBytes) {
      this.sendError(
        conn,
        errorFrame(LiveCode.TOO_MANY, LiveText.frameTooLarge(bytes, this.opts.maxFrameBytes)),
      );
      return;
    }
    if (isBinary) {
      this.sendError(conn, errorFrame(LiveCode.MALFORMED, LiveText.binary));
      return;
    }
    const buffer = Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.isBuffer(data)
        ? data
        : Buffer.from(data);
    const text = buffer.toString('utf8');
    let requestId: RequestId | undefined;
    try {
      const frame = parseFrame(text);
      try {
        requestId = requestIdOf(frame);
      } catch {
        requestId = undefined;
      }
      conn.frameQueue = conn.frameQueue
        .then(() => (conn.closed ? undefined : this.handler.handleFrame(conn, frame)))
        .catch((err: unknown) => this.answerFailure(conn, err, requestId));
    } catch (err) {
      this.answerFailure(conn, err, requestId);
    }
  }

  /** A frame that failed: a FrameError is answered with its code and text; anything else is logged and answered 1. */
  private answerFailure(conn: Connection, err: unknown, requestId: RequestId | undefined): void {
    if (err instanceof FrameError) {
      this.sendError(conn, errorFrame(err.code, err.message, err.requestId ?? requestId, err.reconnect));
      return;
    }
    this.log.error({ err: err instanceof Error ? err.stack : String(err) }, 'realtime frame failed');
    this.sendError(conn, errorFrame(LiveCode.MALFORMED, LiveText.internal, requestId, true));
  }

  /** Pings every connection; one that did not answer the last ping is terminated. */
  private checkHeartbeats(): void {
    for (const conn of this.all) {
      if (!conn.alive) {
        conn.ws.terminate();
        this.removeConnection(conn);
        continue;
      }
      conn.alive = false;
      try {
        conn.ws.ping();
      } catch {
        this.removeConnection(conn);
      }
    }
  }

  /** Closes connections without subscriptions that sent nothing for `idleTimeoutMs`. */
  private closeIdle(): void {
    const limit = Date.now() - this.opts.idleTimeoutMs;
    for (const conn of this.all) {
      if (conn.subs.size === 0 && conn.lastFrameAt < limit) {
        conn.ws.close(1000, 'idle timeout');
        this.removeConnection(conn);
      }
    }
  }
}

/**
 * What opens every frame a connection gets but errors: its clientId, and its installationId when
 * the connect frame gave one (the SDKs hand both to the app with each event, as the incumbent sends
 * them). Event frames are written as text (fan-out.ts), in the same order.
 */
export function frameHead(conn: Connection): { clientId: number; installationId?: string } {
  return conn.installationId === null
    ? { clientId: conn.id }
    : { clientId: conn.id, installationId: conn.installationId };
}

/** The socket under a `ws` WebSocket (not part of its typed API; undefined once it is gone). */
function socketOf(ws: WebSocket): { cork(): void; uncork(): void } | undefined {
  return (ws as unknown as { _socket?: { cork(): void; uncork(): void } | null })._socket ?? undefined;
}
