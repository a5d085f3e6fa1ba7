import { z } from 'zod';

/** The realtime options a service has when it names none (`liveQuery`). */
export const LIVE_QUERY_DEFAULTS = {
  path: '/live',
  classNames: ['*'],
  maxSubscriptionsPerConnection: 100,
  maxFrameBytes: 64 * 1024,
  retentionMs: 5 * 60 * 1000,
  retentionMaxEvents: 10_000,
  pingIntervalMs: 30_000,
  idleTimeoutMs: 10 * 60 * 1000,
  traceSize: 100,
};

/** Realtime subscriptions on the service's own HTTP server (`liveQuery`). */
export const liveQuerySchema = z
  .object({
    path: z
      .string()
      .regex(/^\/[\w\-./]*$/, 'must be a path starting with /')
      .default(LIVE_QUERY_DEFAULTS.path)
      .describe(
        "The WebSocket path on the service's HTTP server, at the server's root (docs/protocol.md#realtime-frames).",
      ),
    classNames: z
      .array(z.string().min(1))
      .default(LIVE_QUERY_DEFAULTS.classNames)
      .describe('Classes open to subscriptions; ["*"] for all, [] turns realtime off.'),
    maxSubscriptionsPerConnection: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(LIVE_QUERY_DEFAULTS.maxSubscriptionsPerConnection)
      .describe('Most subscriptions one connection may hold.'),
    maxFrameBytes: z
      .number()
      .int()
      .min(256)
      .max(16 * 1024 * 1024)
      .default(LIVE_QUERY_DEFAULTS.maxFrameBytes)
      .describe('Largest client frame answered; a bigger one answers 155 (16x bigger closes the socket).'),
    retentionMs: z
      .number()
      .int()
      .min(0)
      .default(LIVE_QUERY_DEFAULTS.retentionMs)
      .describe('How long events are kept for `since` resumption.'),
    retentionMaxEvents: z
      .number()
      .int()
      .min(0)
      .max(1_000_000)
      .default(LIVE_QUERY_DEFAULTS.retentionMaxEvents)
      .describe('Most events kept for resumption, whatever their age.'),
    pingIntervalMs: z
      .number()
      .int()
      .min(0)
      .default(LIVE_QUERY_DEFAULTS.pingIntervalMs)
      .describe('WebSocket pings; a client that has not answered the previous ping is dropped. 0: no pings.'),
    idleTimeoutMs: z
      .number()
      .int()
      .min(0)
      .default(LIVE_QUERY_DEFAULTS.idleTimeoutMs)
      .describe('A connection without subscriptions that sends nothing for this long is closed. 0: never.'),
    traceSize: z
      .number()
      .int()
      .min(0)
      .max(10_000)
      .default(LIVE_QUERY_DEFAULTS.traceSize)
      .describe('Events per class kept in the master-only delivery trace.'),
  })
  .strict();
