import { ErrorCode } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, BffError, bodyOf, parse, unwrap } from './http.ts';

const jsonObject = z.record(z.string(), z.unknown());
const pushBody = z.strictObject({
  where: jsonObject.optional(),
  channels: z.array(z.string().min(1)).min(1).optional(),
  data: jsonObject,
  push_time: z.string().optional(),
  expiration_time: z.string().optional(),
  expiration_interval: z.number().int().positive().optional(),
});
const audienceQuery = z.strictObject({
  where: z.string().optional(),
  channels: z.string().optional(),
});

/** The audience of a push as a where over `_Installation` (only installations with a token). */
function audienceWhere(where: Record<string, unknown> | undefined, channels: string[] | undefined) {
  const parts: Record<string, unknown>[] = [where ?? {}, { deviceToken: { $exists: true } }];
  if (channels?.length) parts.push({ channels: { $in: channels } });
  return { $and: parts };
}

/**
 * Push: whether the service is configured to send, the live audience count, sending (audited) and
 * the status list. The installations are listed by the one installations route (people.ts).
 */
export function registerPushRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId';

  // Whether the service can send at all: the section says so when it opens, not after a send.
  router.get(
    `${base}/push/setup`,
    appRoute(ctx, {}, async (s) => ({ configured: await s.client.serverSupports('push.immediatePush') })),
  );

  router.get(
    `${base}/push/audience`,
    appRoute(ctx, {}, async (s) => {
      const q = parse(audienceQuery, s.req.query, 'audience');
      let where: Record<string, unknown> | undefined;
      if (q.where) {
        try {
          where = jsonObject.parse(JSON.parse(q.where));
        } catch {
          throw new BffError(400, ErrorCode.INVALID_JSON, 'Invalid audience: where must be a JSON object.');
        }
      }
      const channels = q.channels
        ? q.channels
            .split(',')
            .map((c) => c.trim())
            .filter(Boolean)
        : undefined;
      const { results } = unwrap(
        await s.client.aggregate<{ objectId: string | null; n: number }>('_Installation', [
          { $match: audienceWhere(where, channels) },
          { $group: { _id: '$deviceType', n: { $sum: 1 } } },
        ]),
      );
      const byType: Record<string, number> = {};
      for (const r of results) byType[r.objectId ?? 'unknown'] = r.n;
      return { total: results.reduce((sum, r) => sum + r.n, 0), byType };
    }),
  );

  router.post(
    `${base}/push`,
    appRoute(ctx, { write: true }, async (s) => {
      const body = parse(pushBody, bodyOf(s.req), 'push');
      const sent = unwrap(await s.client.sendPush(body, { useMasterKey: true }));
      s.audit('push.send', `_PushStatus/${sent.pushStatusId}`, null, body);
      return { result: true, pushStatusId: sent.pushStatusId };
    }),
  );

  router.get(
    `${base}/push/status`,
    appRoute(ctx, {}, async (s) => {
      const { results } = unwrap(
        await s.client.find('_PushStatus', { order: '-createdAt', limit: 50 }, { useMasterKey: true }),
      );
      return { results };
    }),
  );
}
