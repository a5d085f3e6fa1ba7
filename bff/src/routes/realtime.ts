import { randomBytes } from 'node:crypto';
import {
  type Client,
  type LiveEvent,
  RealtimeConnection,
  type RealtimeError,
  type SubscribeOptions,
  type WebSocketConstructor,
} from '@bds/client';
import { ANY_CLASS_NAME_PATTERN, ErrorCode } from '@bds/client/protocol';
import type express from 'express';
import WebSocket from 'ws';
import { z } from 'zod';
import { answerFor } from '../capabilities.ts';
import { type BffContext, consoleUserOf } from '../context.ts';
import {
  BffError,
  errorAnswer,
  hideCredentials,
  openApp,
  openEventStream,
  param,
  parse,
  redactSecrets,
  redactText,
  unwrap,
} from './http.ts';
import { objectId } from './schemas-edge.ts';

/**
 * The console's realtime inspector: the bff holds a realtime connection of the client library to
 * the service (docs/protocol.md#realtime-frames), one per stream, and streams what it receives to the browser as server-sent events (the browser talks only to
 * the bff; no key, no session token ever reaches it). Viewpoints: master (master key at connect),
 * anonymous (application keys only) or a chosen user, through a short-lived inspection session
 * created master-side without the user's password, marked `createdWith.action: 'inspect'` in
 * `_Session` and deleted when the stream ends. Events the subscription did not receive are read
 * from the service's delivery trace and sent as `filtered` events with the check that filtered
 * them.
 *
 * `GET .../realtime/retention` answers the service's resume window (`GET /live/retention`).
 *
 * SSE events: `ready` {clientId, viewpoint, userId?, inspectionSession?}, `live` {op, eventId,
 * object, original?, at}, `filtered` {eventId, op, objectId, reason, at}, `fail` {code, error}
 * (the stream ends after it), and `: ping` comments.
 */

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
const FILTER_REASONS = new Set(['where', 'clp', 'acl', 'kind', 'session', 'cloud']);

const className = z.string().regex(ANY_CLASS_NAME_PATTERN, 'must be a class name');

const streamQuery = z.strictObject({
  className,
  where: z.string().max(20_000).optional(),
  viewpoint: z.enum(['master', 'anonymous', 'user']).default('master'),
  userId: objectId.optional(),
  keys: z.string().max(2_000).optional(),
});

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

/** The socket to the service: no compression, and an opening handshake that gives up after 10 s. */
class ServiceSocket extends WebSocket {
  constructor(url: string) {
    super(url, { perMessageDeflate: false, handshakeTimeout: 10_000 });
  }
}

/**
 * A realtime connection of its own for one stream (its clientId names the stream's deliveries in
 * the trace): as master, or scoped (application keys; a subscription's session decides). It does
 * not reconnect: a stream whose connection drops ends with a `fail` event.
 */
function openConnection(client: Client, viewpoint: 'master' | 'anonymous' | 'user'): RealtimeConnection {
  return new RealtimeConnection(client, {
    useMasterKey: viewpoint === 'master',
    reconnect: false,
    probe: false,
    WebSocket: ServiceSocket as unknown as WebSocketConstructor,
  });
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
 * Whether the console session of `req` still holds, read through the context's sessions (the
 * check the session middleware makes), so logout, "sign out everywhere" and the timeouts end a
 * stream as they end any other request. Only a definite "no" ends it: a failing check does not.
 */
async function consoleSessionHolds(ctx: BffContext, req: express.Request): Promise<boolean> {
  if (!ctx.sessions) return true;
  try {
    return await ctx.sessions.holds(req);
  } catch {
    return true;
  }
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
    return { user, ...openApp(ctx, req, user) };
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

  // The resume window now (master-only on the service; any console user of the app may read it).
  router.get(`${base}/retention`, async (req, res) => {
    try {
      const { user, client } = checkApp(req);
      const window = unwrap(await client.request('GET', '/live/retention', master));
      res.json(redactSecrets(answerFor(user.role, window), secrets()));
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

    openEventStream(req, res);

    let ended = false;
    let connection: RealtimeConnection | undefined;
    let inspection: { objectId: string; token: string } | undefined;
    const timers: NodeJS.Timeout[] = [];
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
      connection?.close();
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
          throw new BffError(400, ErrorCode.INVALID_JSON, 'Invalid stream query: where is not JSON.');
        }
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
          throw new BffError(400, ErrorCode.INVALID_JSON, 'Invalid stream query: where must be an object.');
        }
        where = parsed as Record<string, unknown>;
      }
      if (q.viewpoint === 'user' && !q.userId) {
        throw new BffError(
          400,
          ErrorCode.INVALID_JSON,
          'Invalid stream query: a user viewpoint needs userId.',
        );
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

      const live = openConnection(client, q.viewpoint);
      connection = live;
      // A user viewpoint acts as its inspection session, the anonymous one as no session at all.
      const actAs: SubscribeOptions =
        q.viewpoint === 'master' ? {} : { sessionToken: inspection ? inspection.token : null };
      const subscription = live.subscribe(
        { className: q.className, where, ...(q.keys ? { keys: q.keys.split(',').filter(Boolean) } : {}) },
        actAs,
      );

      const pollTrace = async () => {
        const clientId = live.clientId;
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
            (d) => d.clientId === clientId && String(d.requestId) === String(subscription.requestId),
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

      const sendLive = (event: LiveEvent) =>
        emit('live', {
          op: event.kind,
          eventId: event.eventId,
          object: event.object,
          ...(event.original ? { original: event.original } : {}),
          at: new Date().toISOString(),
        });
      const failWith = (error: RealtimeError) =>
        fail(error.code ?? ErrorCode.INTERNAL_SERVER_ERROR, error.message);

      let connected = false;
      live.on('open', () => {
        connected = true;
      });
      live.on('error', failWith);
      live.on('close', () => {
        if (ended) return;
        // Closed before the service accepted the connect frame: it was never reached.
        if (connected) fail(ErrorCode.CONNECTION_FAILED, 'The data service closed the realtime connection.');
        else fail(ErrorCode.CONNECTION_FAILED, 'The data service realtime endpoint is unreachable.');
      });
      subscription
        .on('open', () => {
          emit('ready', {
            clientId: live.clientId,
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
        })
        .on('create', (_object, event) => sendLive(event))
        .on('delete', (_object, event) => sendLive(event))
        .on('update', (_object, _original, event) => sendLive(event))
        .on('enter', (_object, _original, event) => sendLive(event))
        .on('leave', (_object, _original, event) => sendLive(event))
        .on('error', failWith);

      timers.push(
        setInterval(() => {
          if (!ended) res.write(': ping\n\n');
        }, realtimeTiming.heartbeatMs),
        setInterval(() => {
          void consoleSessionHolds(ctx, req).then((holds) => {
            if (!holds) fail(ErrorCode.INVALID_SESSION_TOKEN, 'The console session ended.');
          });
        }, realtimeTiming.sessionCheckMs),
      );
      if (inspection) {
        const t = setTimeout(
          () =>
            fail(
              ErrorCode.INVALID_SESSION_TOKEN,
              'The inspection session expired; open the inspector again.',
            ),
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
