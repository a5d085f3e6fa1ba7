import { type AnalyticsAdapter, countEvents } from '../../analytics/service.ts';
import type { Data } from '../../data/data.ts';
import type { Router } from '../router.ts';

/** GET /analytics/events (master only): stored events counted per name per hour or day. */
export function registerAnalyticsRoutes(router: Router, data: Data, adapter: AnalyticsAdapter): void {
  router.add('GET', '/analytics/events', async (req) => ({
    body: { results: await countEvents(data, adapter, req.ctx, req.query) },
  }));
}
