import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { Client } from '@bds/client';
import type express from 'express';
import WebSocket from 'ws';
import { z } from 'zod';
import { answerFor } from '../capabilities.ts';
import { type BffContext, consoleUserOf } from '../context.ts';
import {
  BffError,
  Code,
  demandQueryAllowed,
  errorAnswer,
  hideCredentials,
  mayOpen,
  param,
  parse,
  redactSecrets,
  redactText,
  unwrap,
} from './http.ts';
import { objectId } from './schemas-edge.ts';

/**
 * The console's realtime inspector: the bff holds a WebSocket to the service's LiveQuery endpoint
 * and streams what it receives to the browser as server-sent events (the browser talks only to
 * the bff; no key, no session token ever reaches it). Viewpoints: master (master key at connect),
 * anonymous (application keys only) or a chosen user, through a short-lived inspection session
 * created master-side without the user's password, marked `createdWith.action: 'inspect'` in
 * `_Session` and deleted when the stream ends. Events the subscription did not receive are read
 * from the service's delivery trace and sent as `filtered` events with the check that filtered
 * them.
 *
 * SSE events: `ready` {clientId, viewpoint, userId?, inspectionSession?}, `live` {op, eventId,
 * object, original?, at}, `filtered` {eventId, op, objectId, reason, at}, `fail` {code, error}
 * (the stream ends after it), and `: ping` comments.
 */

/** The service's LiveQuery path (its option `liveQuery.path`, default `/live`), at the server's root. */
export const LIVE_PATH = '/live';

/** Timings (tests shorten them). */
export const realtimeTiming = {
  /** How often the console session behind a stream is checked (logout, sign out everywhere, expiry). */
  sessionCheckMs: 5_000,
  /** How often the delivery trace is read for the stream's filtered events. */
  traceMs: 1_000,
  /** SSE comment that keeps proxies from closing an idle stream. */
  heartbeatMs: 15_000,
  /** Lifetime of an inspection session (the stream ends with it; the browser may open a new one). */
  inspectionMs: 60 * 60_000,
};

const master = { useMasterKey: true } as const;
const REQUEST_ID = 1;
const FILTER_REASONS = new Set(['where', 'clp', 'acl', 'kind', 'session']);

const streamQuery = z.strictObject({
  className: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be a class name'),
  where: z.string().max(20_000).optional(),
  viewpoint: z.enum(['master', 'anonymous', 'user']).default('master'),
  userId: objectId.optional(),
  keys: z.string().max(2_000).optional(),
});

const className = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be a class name');

interface TraceDelivery {
  clientId: number;
  requestId: number | string;
  delivered: string | null;
  filteredBy?: string;
}

interface TraceEntry {
  eventId: string;
  op: string;
  objectId: string;
  at: string;
  deliveries: TraceDelivery[];
}

/** The WebSocket URL of the service behind a client (`ws(s)://host[:port]/live`). */
export function liveUrl(client: Client): string {
  const u = new URL(client.serverURL);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.pathname = LIVE_PATH;
  u.search = '';
  u.hash = '';
  return u.toString();
}

/** A user's inspection session: made with the master key, without the user's password. */
async function openInspection(
  client: Client,
  userId: string,
  inspector: string,
): Promise<{ objectId: string; token: string }> {
  const token = `r:${randomBytes(24).toString('hex')}`;
  const created = unwrap(
    await client.create<{ objectId: string }>(
      '_Session',
      {
        user: { __type: 'Pointer', className: '_User', objectId: userId },
        sessionToken: token,
        expiresAt: { __type: 'Date', iso: new Date(Date.now() + realtimeTiming.inspectionMs).toISOString() },
        createdWith: { action: 'inspect', authProvider: 'master', inspector },
        ACL: {},
      },
      master,
    ),
  );
  return { objectId: created.objectId, token };
}

/**
 * Whether the console session of `req` still holds: asks the bff itself (GET /bff/session with
 * the same cookie, on the socket the request came in on), so logout, "sign out everywhere" and
 * the timeouts end a stream exactly as they end any other request.
 */
function sessionHolds(req: express.Request): Promise<boolean> {
  const address = req.socket.localAddress ?? '127.0.0.1';
  const host =
    address.includes(':') && !address.startsWith('::ffff:')
      ? `[${address}]`
      : address.replace(/^::ffff:/, '');
  return new Promise((resolve) => {
    const r = httpRequest(
      {
        host: host.replace(/^\[|\]$/g, ''),
        port: req.socket.localPort,
        path: '/bff/session',
        method: 'GET',
        headers: { cookie: req.headers.cookie ?? '', host: req.headers.host ?? host },
        timeout: 5_000,
      },
      (res) => {
        res.resume();
        // Only a definite 401 ends the stream; a transient failure does not.
        resolve(res.statusCode !== 401);
      },
    );
    r.on('timeout', () => r.destroy());
    r.on('error', () => resolve(true));
    r.end();
  });
}

/** The open inspector streams of each bff, so that closing the bff can end them. */
const openStreams = new WeakMap<BffContext, Set<() => Promise<void>>>();

/** Ends every open inspector stream of this bff (its inspection sessions are deleted). */
export async function closeRealtimeStreams(ctx: BffContext): Promise<void> {
  const streams = openStreams.get(ctx);
  if (streams) await Promise.all([...streams].map((end) => end()));
}

export function registerRealtimeRoutes(router: express.Router, ctx: BffContext): void {
  const streams = new Set<() => Promise<void>>();
  openStreams.set(ctx, streams);
  const base = '/apps/:appId/realtime';
  const secrets = () =>
    ctx.apps
      .secrets()
      .filter((s) => s.length > 0)
      .sort((a, b) => b.length - a.length);

  const checkApp = (req: express.Request) => {
    const user = consoleUserOf(req);
    demandQueryAllowed(user, req);
    const appId = param(req, 'appId');
    if (!ctx.apps.has(appId)) throw new BffError(404, Code.OBJECT_NOT_FOUND, `Unknown app: ${appId}.`);
    if (!mayOpen(user, appId)) {
      throw new BffError(403, Code.FORBIDDEN, `Console user ${user.username} may not open app ${appId}.`);
    }
    return { user, appId, client: ctx.apps.clientFor(appId) };
  };

  // The delivery trace of a class (master-only on the service; any console user of the app may read it).
  router.get(`${base}/trace/:className`, async (req, res) => {
    try {
      const { user, client } = checkApp(req);
      const c = parse(className, param(req, 'className'), 'class name');
      const trace = unwrap(await client.request('GET', `/live/trace/${encodeURIComponent(c)}`, master));
      res.json(redactSecrets(answerFor(user.role, trace), secrets()));
    } catch (err) {
      const a = errorAnswer(err);
      res.status(a.status).json({ code: a.code, error: redactText(a.error, secrets()) });
    }
  });

  router.get(`${base}/stream`, async (req, res) => {
    let scope: ReturnType<typeof checkApp>;
    try {
      scope = checkApp(req);
    } catch (err) {
      const a = errorAnswer(err);
      res.status(a.status).json({ code: a.code, error: a.error });
      return;
    }
    const { user, appId, client } = scope;
    const keys = secrets();

    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    req.socket.setKeepAlive(true);
    req.socket.setNoDelay(true);

    let ended = false;
    let ws: WebSocket | undefined;
    let inspection: { objectId: string; token: string } | undefined;
    const timers: NodeJS.Timeout[] = [];
    let clientId: number | undefined;
    const seen = new Set<string>();
    const seenOrder: string[] = [];

    const emit = (event: string, data: unknown) => {
      if (ended) return;
      const safe = redactSecrets(answerFor(user.role, hideCredentials(data)), keys);
      res.write(`event: ${event}\ndata: ${JSON.stringify(safe)}\n\n`);
    };

    const end = async () => {
      if (ended) return;
      ended = true;
      streams.delete(end);
      for (const t of timers) clearInterval(t);
      if (ws && ws.readyState !== WebSocket.CLOSED) {
        try {
          ws.close(1000);
        } catch {
          ws.terminate();
        }
      }
      res.end();
      if (inspection) {
        const id = inspection.objectId;
        inspection = undefined;
        try {
          await client.destroy('_Session', id, master);
        } catch {
          // Expires on its own (realtimeTiming.inspectionMs).
        }
      }
    };
    const fail = (code: number, error: string) => {
      emit('fail', { code, error: redactText(error, keys) });
      void end();
    };
    streams.add(end);
    req.on('close', () => void end());
    res.on('error', () => void end());

    try {
      const q = parse(streamQuery, req.query, 'stream query');
      let where: Record<string, unknown> = {};
      if (q.where) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(q.where);
        } catch {
          throw new BffError(400, Code.INVALID_JSON, 'Invalid stream query: where is not JSON.');
        }
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
          throw new BffError(400, Code.INVALID_JSON, 'Invalid stream query: where must be an object.');
        }
        where = parsed as Record<string, unknown>;
      }
      if (q.viewpoint === 'user' && !q.userId) {
        throw new BffError(400, Code.INVALID_JSON, 'Invalid stream query: a user viewpoint needs userId.');
      }
      if (q.viewpoint === 'user' && q.userId) {
        unwrap(await client.get('_User', q.userId, { keys: 'objectId', ...master }));
        if (ended) return;
        inspection = await openInspection(client, q.userId, `${user.username}@console`);
        if (ended) {
          await client.destroy('_Session', inspection.objectId, master).catch(() => undefined);
          inspection = undefined;
          return;
        }
        ctx.audit.record({
          user: user.username,
          app: appId,
          action: 'realtime.inspect',
          target: `_User/${q.userId}`,
          before: null,
          after: { className: q.className, where, session: `_Session/${inspection.objectId}` },
        });
      }

      const o = client.options;
      const connect: Record<string, unknown> = { op: 'connect', applicationId: o.applicationId };
      if (q.viewpoint === 'master') connect.masterKey = o.masterKey;
      else {
        if (o.restAPIKey) connect.restAPIKey = o.restAPIKey;
        if (o.javaScriptKey) connect.javascriptKey = o.javaScriptKey;
        if (o.clientKey) connect.clientKey = o.clientKey;
        if (inspection) connect.sessionToken = inspection.token;
      }
      const subscribe = {
        op: 'subscribe',
        requestId: REQUEST_ID,
        query: {
          className: q.className,
          where,
          ...(q.keys ? { keys: q.keys.split(',').filter(Boolean) } : {}),
        },
      };

      const pollTrace = async () => {
        if (ended || clientId === undefined) return;
        const r = await client.request<{ results: TraceEntry[] }>(
          'GET',
          `/live/trace/${encodeURIComponent(q.className)}`,
          master,
        );
        if (!r.success || ended) return;
        for (const entry of r.data.results ?? []) {
          if (seen.has(entry.eventId)) continue;
          const mine = entry.deliveries?.find(
            (d) => d.clientId === clientId && String(d.requestId) === String(REQUEST_ID),
          );
          if (!mine) continue;
          seen.add(entry.eventId);
          seenOrder.push(entry.eventId);
          if (seenOrder.length > 2_000) seen.delete(seenOrder.shift()!);
          if (mine.delivered !== null) continue;
          const reason = mine.filteredBy && FILTER_REASONS.has(mine.filteredBy) ? mine.filteredBy : 'unknown';
          emit('filtered', {
            eventId: entry.eventId,
            op: entry.op,
            objectId: entry.objectId,
            reason,
            at: entry.at,
          });
        }
      };

      ws = new WebSocket(liveUrl(client), { perMessageDeflate: false, handshakeTimeout: 10_000 });
      ws.on('open', () => ws?.send(JSON.stringify(connect)));
      ws.on('message', (raw) => {
        let frame: Record<string, unknown>;
        try {
          frame = JSON.parse(String(raw));
        } catch {
          return;
        }
        switch (frame.op) {
          case 'connected':
            clientId = typeof frame.clientId === 'number' ? frame.clientId : undefined;
            ws?.send(JSON.stringify(subscribe));
            return;
          case 'subscribed':
            emit('ready', {
              clientId,
              className: q.className,
              where,
              viewpoint: q.viewpoint,
              ...(q.userId ? { userId: q.userId } : {}),
              ...(inspection ? { inspectionSession: inspection.objectId } : {}),
            });
            timers.push(
              setInterval(() => {
                pollTrace().catch(() => undefined);
              }, realtimeTiming.traceMs),
            );
            return;
          case 'create':
          case 'update':
          case 'delete':
          case 'enter':
          case 'leave':
            emit('live', {
              op: frame.op,
              eventId: frame.eventId,
              object: frame.object,
              ...(frame.original ? { original: frame.original } : {}),
              at: new Date().toISOString(),
            });
            return;
          case 'error':
            fail(
              typeof frame.code === 'number' ? frame.code : Code.INTERNAL,
              typeof frame.error === 'string' ? frame.error : 'Realtime error.',
            );
            return;
          default:
            return;
        }
      });
      ws.on('error', () =>
        fail(Code.CONNECTION_FAILED, 'The data service realtime endpoint is unreachable.'),
      );
      ws.on('close', () => {
        if (!ended) fail(Code.CONNECTION_FAILED, 'The data service closed the realtime connection.');
      });

      timers.push(
        setInterval(() => {
          if (!ended) res.write(': ping\n\n');
        }, realtimeTiming.heartbeatMs),
        setInterval(() => {
          void sessionHolds(req).then((ok) => {
            if (!ok) fail(209, 'The console session ended.');
          });
        }, realtimeTiming.sessionCheckMs),
      );
      if (inspection) {
        const t = setTimeout(
          () => fail(209, 'The inspection session expired; open the inspector again.'),
          realtimeTiming.inspectionMs,
        );
        timers.push(t);
      }
    } catch (err) {
      const a = errorAnswer(err);
      fail(a.code, a.error);
    }
  });
}
