import WebSocket from 'ws';
import { KEYS, type TestService } from './service.ts';

/** An event id as the service writes it (`<boot>-<sequence>`, fixed width: docs/protocol.md#realtime-frames). */
export const EVENT_ID_PATTERN = /^[0-9a-z]{9}-\d{12}$/;

/** Generous: frames normally arrive in milliseconds; this only bounds a failing test. */
export const FRAME_TIMEOUT = 15_000;

/**
 * A realtime test client over a real `ws` socket: frames are kept in arrival order and taken one by
 * one, so a test states exactly which frames came and in what order.
 */
export class LiveClient {
  readonly frames: any[] = [];
  private waiter: (() => void) | undefined;
  closed: { code: number; reason: string } | undefined;
  private closedWaiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(data.toString()));
      this.waiter?.();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const w of this.closedWaiters) w();
      this.waiter?.();
    });
    ws.on('error', () => {});
  }

  static async open(t: TestService, path = '/live'): Promise<LiveClient> {
    const ws = new WebSocket(`ws://127.0.0.1:${t.port}${path}`);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new LiveClient(ws);
  }

  /** Opens and connects (REST key by default); answers the client. */
  static async connect(t: TestService, extra: Record<string, unknown> = {}): Promise<LiveClient> {
    const c = await LiveClient.open(t);
    c.send({ op: 'connect', applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey, ...extra });
    const frame = await c.take();
    if (frame.op !== 'connected') throw new Error(`connect answered ${JSON.stringify(frame)}`);
    return c;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The next frame, in order. */
  async take(timeoutMs = FRAME_TIMEOUT): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length === 0) {
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) while waiting for a frame`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no frame within the timeout');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = undefined;
    }
    return this.frames.shift();
  }

  /** Frames up to and including the first that `pred` accepts. */
  async until(pred: (frame: any) => boolean, timeoutMs = FRAME_TIMEOUT): Promise<any[]> {
    const out: any[] = [];
    for (;;) {
      const frame = await this.take(timeoutMs);
      out.push(frame);
      if (pred(frame)) return out;
    }
  }

  async subscribe(
    requestId: number | string,
    query: Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ): Promise<any> {
    this.send({ op: 'subscribe', requestId, query, ...extra });
    return this.take();
  }

  async waitClosed(timeoutMs = FRAME_TIMEOUT): Promise<{ code: number; reason: string }> {
    if (this.closed) return this.closed;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('socket not closed within the timeout')), timeoutMs);
      this.closedWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return this.closed!;
  }

  close(): void {
    this.ws.close();
  }
}

/** The marker class: every test client subscribes to it publicly; a marker write then proves the order. */
export const MARKER = 'LiveMarker';

export async function subscribeMarker(c: LiveClient): Promise<void> {
  const frame = await c.subscribe('marker', { className: MARKER, where: {} });
  if (frame.op !== 'subscribed') throw new Error(`marker subscribe answered ${JSON.stringify(frame)}`);
}

/**
 * The frames each client received before a marker written now: events are decided in the order of
 * the writes and sent in order on a connection, so whatever was not received by then never will be.
 */
export async function flush(t: TestService, ...clients: LiveClient[]): Promise<any[][]> {
  const res = await t.request('POST', `/classes/${MARKER}`, { as: 'master', body: { at: Date.now() } });
  if (res.status !== 201) throw new Error(`marker write failed: ${res.text}`);
  const id = res.json.objectId;
  const out: any[][] = [];
  for (const c of clients) {
    const frames = await c.until((f) => f.requestId === 'marker' && f.object?.objectId === id);
    out.push(frames.slice(0, -1));
  }
  return out;
}

export async function signUp(t: TestService, username: string): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/users', { body: { username, password: 'pw-123456' } });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.text}`);
  return { id: res.json.objectId, token: res.json.sessionToken };
}

export const pointer = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });
