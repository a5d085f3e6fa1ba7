import type { Client } from '@bds/client';
import {
  ErrorCode,
  LOG_FILTERS,
  type LogLine,
  type LogsAnswer,
  type RequestLinesAnswer,
  TRACE_ID_PATTERN,
} from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import { answerFor } from '../capabilities.ts';
import { type BffContext, consoleUserOf } from '../context.ts';
import {
  appRoute,
  errorAnswer,
  openApp,
  openEventStream,
  param,
  parse,
  redactSecrets,
  redactText,
  unwrap,
} from './http.ts';

/**
 * The console's Logs section: the service's request logs (docs/protocol.md#request-logs, master
 * only on the service) for every console user of the app: GET /apps/<app>/logs (the filters are
 * passed on; the service checks them), GET /apps/<app>/logs/<requestId> (a request's lines) and
 * GET /apps/<app>/logs/tail, a live tail as server-sent events, as the realtime inspector streams
 * (routes/realtime.ts): the bff asks the service for the lines after the last one sent every
 * `logsTiming.pollMs`; the browser never holds a key.
 *
 * SSE events: `ready` {}, `line` (a request line, oldest first), `fail` {code, error} (the stream
 * ends after it), and `: ping` comments.
 */

/** Timings (tests shorten them). */
export const logsTiming = {
  pollMs: 1_000,
  heartbeatMs: 15_000,
  /** How often the console session behind a tail is checked (logout, expiry). */
  sessionCheckMs: 5_000,
};

const master = { useMasterKey: true } as const;

const filterQuery = z.strictObject(
  Object.fromEntries(LOG_FILTERS.map((name) => [name, z.string().max(200).optional()])) as Record<
    (typeof LOG_FILTERS)[number],
    z.ZodOptional<z.ZodString>
  >,
);

/** A request id as the service makes or takes them (kernel/trace.ts). */
const requestIdParam = z.string().regex(TRACE_ID_PATTERN, 'must be a request id');

/** The open tails of each bff, so that closing the bff can end them. */
const openTails = new WeakMap<BffContext, Set<() => void>>();

/** Ends every open tail of this bff. */
export function closeLogTails(ctx: BffContext): void {
  for (const end of openTails.get(ctx) ?? []) end();
}

export function registerLogRoutes(router: express.Router, ctx: BffContext): void {
  const tails = new Set<() => void>();
  openTails.set(ctx, tails);
  const base = '/apps/:appId/logs';
  const secrets = () =>
    ctx.apps
      .secrets()
      .filter((s) => s.length > 0)
      .sort((a, b) => b.length - a.length);

  router.get(
    base,
    appRoute(ctx, {}, async (s) => {
      const query = parse(filterQuery, s.req.query, 'logs filter');
      return unwrap(await s.client.request<LogsAnswer>('GET', '/logs', { ...master, query }));
    }),
  );

  // Registered before /logs/:requestId, which would take `tail` as a request id.
  router.get(`${base}/tail`, async (req, res) => {
    let scope: { user: ReturnType<typeof consoleUserOf>; client: Client };
    try {
      const user = consoleUserOf(req);
      scope = { user, client: openApp(ctx, req, user).client };
    } catch (err) {
      const a = errorAnswer(err);
      res.status(a.status).json({ code: a.code, error: a.error });
      return;
    }
    const { user, client } = scope;
    const keys = secrets();
    openEventStream(req, res);

    let ended = false;
    const timers: NodeJS.Timeout[] = [];
    const emit = (event: string, data: unknown) => {
      if (ended) return;
      const safe = redactSecrets(answerFor(user.role, data), keys);
      res.write(`event: ${event}\ndata: ${JSON.stringify(safe)}\n\n`);
    };
    const end = () => {
      if (ended) return;
      ended = true;
      tails.delete(end);
      for (const t of timers) clearInterval(t);
      res.end();
    };
    const fail = (code: number, error: string) => {
      emit('fail', { code, error: redactText(error, keys) });
      end();
    };
    tails.add(end);
    req.on('close', end);
    res.on('error', end);

    // Lines at or after `since` not sent yet: the ids sent at the newest instant seen are kept,
    // so a line written in the same millisecond as the last one sent is neither lost nor repeated.
    let since = Date.now();
    let sentAtSince = new Set<string>();
    let polling = false;
    const poll = async () => {
      if (ended || polling) return;
      polling = true;
      try {
        const r = await client.request<LogsAnswer>('GET', '/logs', {
          ...master,
          query: { from: String(since), limit: '1000' },
        });
        if (ended) return;
        if (!r.success) {
          fail(r.code, r.error);
          return;
        }
        const fresh: LogLine[] = r.data.results.filter((l) => !sentAtSince.has(l.id)).reverse();
        for (const line of fresh) {
          const at = Date.parse(line.at);
          if (at > since) {
            since = at;
            sentAtSince = new Set();
          }
          sentAtSince.add(line.id);
          emit('line', line);
        }
      } catch (err) {
        const a = errorAnswer(err);
        fail(a.code, a.error);
      } finally {
        polling = false;
      }
    };
    emit('ready', {});
    timers.push(
      setInterval(() => void poll(), logsTiming.pollMs),
      setInterval(() => {
        if (!ended) res.write(': ping\n\n');
      }, logsTiming.heartbeatMs),
      setInterval(() => {
        if (!ctx.sessions) return;
        ctx.sessions
          .holds(req)
          .then((holds) => {
            if (!holds) fail(ErrorCode.INVALID_SESSION_TOKEN, 'The console session ended.');
          })
          .catch(() => undefined);
      }, logsTiming.sessionCheckMs),
    );
  });

  router.get(
    `${base}/:requestId`,
    appRoute(ctx, {}, async (s) => {
      const id = parse(requestIdParam, param(s.req, 'requestId'), 'request id');
      return unwrap(
        await s.client.request<RequestLinesAnswer>('GET', `/logs/${encodeURIComponent(id)}`, master),
      );
    }),
  );
}
