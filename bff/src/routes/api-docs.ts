import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, parse, unwrap } from './http.ts';

const docsQuery = z.strictObject({ as: z.enum(['master', 'anonymous']).default('master') });

/**
 * The service's API document (GET /openapi.json, docs/protocol.md#openapi) for the console's API
 * tab: as the master key reaches the app (every class), or as a client with the application keys
 * only (`?as=anonymous`: the classes and operations the class-level permissions leave to the
 * public). Every console user may read it; it holds no key.
 */
export function registerApiDocsRoutes(router: express.Router, ctx: BffContext): void {
  router.get(
    '/apps/:appId/openapi.json',
    appRoute(ctx, {}, async (s) => {
      const { as } = parse(docsQuery, s.req.query, 'API document query');
      return unwrap(
        await s.client.request<Record<string, unknown>>(
          'GET',
          '/openapi.json',
          as === 'master' ? { useMasterKey: true } : { sessionToken: '' },
        ),
      );
    }),
  );
}
