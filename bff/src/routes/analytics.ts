import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, parse, unwrap } from './http.ts';

const analyticsQuery = z.strictObject({
  interval: z.enum(['hour', 'day']).optional(),
  since: z.string().max(40).optional(),
  until: z.string().max(40).optional(),
  names: z.string().max(2000).optional(),
  dimensions: z.string().max(2000).optional(),
});

/** Stored analytics events counted per name over time; `{enabled: false}` when the service keeps none. */
export function registerAnalyticsRoutes(router: express.Router, ctx: BffContext): void {
  router.get(
    '/apps/:appId/analytics',
    appRoute(ctx, {}, async (s) => {
      const q = parse(analyticsQuery, s.req.query, 'analytics query');
      if (!(await s.client.serverSupports('analytics.stored'))) return { enabled: false, results: [] };
      const res = await s.client.request('GET', '/analytics/events', { useMasterKey: true, query: q });
      return { enabled: true, results: unwrap(res).results };
    }),
  );
}
