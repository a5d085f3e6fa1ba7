import type express from 'express';
import type { BffContext } from '../context.ts';
import { appRoute, unwrap } from './http.ts';

/**
 * The service's effective options (its master-only GET /serverInfo/options), for the console's
 * Server page. Read-only console users may read them: the service answers no secret by
 * construction (server/src/config/options-view.ts), and every answer passes the bff's filter.
 */
export function registerServerRoutes(router: express.Router, ctx: BffContext): void {
  router.get(
    '/apps/:appId/server/options',
    appRoute(ctx, {}, async (s) =>
      unwrap(await s.client.request('GET', '/serverInfo/options', { useMasterKey: true })),
    ),
  );
}
