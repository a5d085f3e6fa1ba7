import { KEY_BELOW_FIELD_PATTERN } from '@bds/client/protocol';
import { z } from 'zod';
import { demandMaster } from '../data/authorize.ts';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import { normaliseIso } from '../query/parse.ts';

export interface AnalyticsEvent {
  name: string;
  dimensions: Record<string, string>;
  /** ISO 8601, UTC. */
  at: string;
}

/** Where accepted analytics events go. */
export interface AnalyticsAdapter {
  readonly stores: boolean;
  track(event: AnalyticsEvent): Promise<void>;
}

/** The default: events are accepted and not stored (docs/protocol.md#push-analytics-and-aggregation). */
export const noAnalytics: AnalyticsAdapter = { stores: false, track: async () => {} };

/** The class of stored events (`hour` and `day` are the UTC buckets of `at`); it exists only with the store adapter. */
const EVENT_FIELDS = {
  name: { type: 'String' },
  at: { type: 'Date' },
  hour: { type: 'String' },
  day: { type: 'String' },
  dimensions: { type: 'Object' },
};

/** Keeps every event as a row of the master-only class `_AnalyticsEvent`, written through the pipeline. */
export class StoredAnalytics implements AnalyticsAdapter {
  readonly stores = true;
  constructor(private readonly data: Data) {}

  /** Creates the events class on the first start with this adapter. */
  async start(): Promise<void> {
    if (this.data.core.schemas.get('_AnalyticsEvent')) return;
    await this.data.writes.createClass(ctxOf(MASTER, 'system'), '_AnalyticsEvent', { fields: EVENT_FIELDS });
  }

  async track(event: AnalyticsEvent): Promise<void> {
    await this.data.writes.create(ctxOf(MASTER, 'system'), '_AnalyticsEvent', {
      name: event.name,
      at: { __type: 'Date', iso: event.at },
      hour: event.at.slice(0, 13),
      day: event.at.slice(0, 10),
      ...(Object.keys(event.dimensions).length ? { dimensions: event.dimensions } : {}),
      ACL: {},
    });
  }
}

export const ANALYTICS_OFF =
  'Analytics events are not stored: set the option analytics.adapter to "store" to keep and query them.';

const iso = z.string().transform((v, ctx) => {
  const out = normaliseIso(v);
  if (!out) {
    ctx.addIssue({ code: 'custom', message: `${v} is not an ISO 8601 date` });
    return z.NEVER;
  }
  return out;
});

const querySchema = z
  .object({
    interval: z.enum(['hour', 'day']).default('day'),
    since: iso.optional(),
    until: iso.optional(),
    /** Comma-separated event names. */
    names: z.string().optional(),
    /** JSON object of dimension -> value that the events must carry. */
    dimensions: z.string().optional(),
  })
  .strict();

export interface EventCount {
  name: string;
  /** `YYYY-MM-DDTHH` (hour) or `YYYY-MM-DD` (day), UTC. */
  bucket: string;
  count: number;
}

/** Counts of stored events per name per hour or day (master only): one SQL GROUP BY through aggregation. */
export async function countEvents(
  data: Data,
  adapter: AnalyticsAdapter,
  ctx: Ctx,
  params: Record<string, unknown>,
): Promise<EventCount[]> {
  demandMaster(ctx.caller, 'analytics');
  if (!adapter.stores) throw new BdsError(ErrorCode.INVALID_QUERY, ANALYTICS_OFF);
  const parsed = querySchema.safeParse(params);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.code === 'unrecognized_keys' ? issue.keys[0] : issue.path.join('.');
    throw new BdsError(ErrorCode.INVALID_QUERY, `Invalid analytics query: ${field}: ${issue.message}.`);
  }
  const q = parsed.data;
  const match: Record<string, unknown> = {};
  const at: Record<string, unknown> = {};
  if (q.since) at.$gte = { __type: 'Date', iso: q.since };
  if (q.until) at.$lt = { __type: 'Date', iso: q.until };
  if (Object.keys(at).length) match.at = at;
  if (q.names) match.name = { $in: q.names.split(',').filter(Boolean) };
  if (q.dimensions) {
    let dims: unknown;
    try {
      dims = JSON.parse(q.dimensions);
    } catch {
      dims = undefined;
    }
    if (typeof dims !== 'object' || dims === null || Array.isArray(dims)) {
      throw new BdsError(
        ErrorCode.INVALID_QUERY,
        'Invalid analytics query: dimensions must be a JSON object.',
      );
    }
    for (const [key, value] of Object.entries(dims)) {
      if (!KEY_BELOW_FIELD_PATTERN.test(key) || typeof value !== 'string') {
        throw new BdsError(
          ErrorCode.INVALID_QUERY,
          'Invalid analytics query: dimensions must map names to strings.',
        );
      }
      match[`dimensions.${key}`] = value;
    }
  }
  const rows = await data.aggregate.run(ctx, '_AnalyticsEvent', [
    { $match: match },
    { $group: { _id: { name: '$name', bucket: `$${q.interval}` }, count: { $sum: 1 } } },
  ]);
  return rows
    .map((r) => {
      const key = r.objectId as { name: string; bucket: string };
      return { name: key.name, bucket: key.bucket, count: r.count as number };
    })
    .sort((a, b) => (a.bucket === b.bucket ? a.name.localeCompare(b.name) : a.bucket < b.bucket ? -1 : 1));
}
