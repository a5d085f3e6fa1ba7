import express from 'express';
import type { BffContext } from '../context.ts';
import { registerAnalyticsRoutes } from './analytics.ts';
import { registerApiConsoleRoutes } from './api-console.ts';
import { registerApiDocsRoutes } from './api-docs.ts';
import { registerAuditRoutes } from './audit.ts';
import { registerCloudRoutes } from './cloud.ts';
import { registerConfigRoutes } from './config.ts';
import { registerConsoleRoutes } from './console.ts';
import { registerFileRoutes } from './files.ts';
import { registerFilterRoutes } from './filters.ts';
import { registerFromParseRoutes } from './from-parse.ts';
import { registerHistoryRoutes } from './history.ts';
import { mayOpen, plain } from './http.ts';
import { registerImportRoutes } from './imports.ts';
import { registerLogRoutes } from './logs.ts';
import { registerPeopleRoutes } from './people.ts';
import { registerPerformanceRoutes } from './performance.ts';
import { registerPushRoutes } from './push.ts';
import { registerRealtimeRoutes } from './realtime.ts';
import { registerRoleRoutes } from './roles.ts';
import { registerRowRoutes } from './rows.ts';
import { registerSchemaRoutes } from './schemas.ts';
import { registerSecurityRoutes } from './security.ts';
import { registerServerRoutes } from './server.ts';
import { registerUserRoutes } from './users.ts';

/**
 * The console's API, mounted under `/bff/` behind the foundation's session, CSRF, read-only
 * and per-app middlewares. Every route answers JSON; errors are `{code, error}`.
 */
export function registerApiRoutes(router: express.Router, ctx: BffContext): void {
  // No-op when the foundation already parsed the body.
  router.use(['/apps', '/audit'], express.json({ limit: '20mb' }));

  router.get(
    '/apps',
    plain(ctx, async ({ user }) => ({ results: ctx.apps.list().filter((a) => mayOpen(user, a.id)) })),
  );
  registerSchemaRoutes(router, ctx);
  registerImportRoutes(router, ctx);
  registerFilterRoutes(router, ctx);
  registerRowRoutes(router, ctx);
  registerRoleRoutes(router, ctx);
  registerUserRoutes(router, ctx);
  registerConfigRoutes(router, ctx);
  registerConsoleRoutes(router, ctx);
  registerAuditRoutes(router, ctx);
  registerCloudRoutes(router, ctx);
  registerFileRoutes(router, ctx);
  registerPushRoutes(router, ctx);
  registerAnalyticsRoutes(router, ctx);
  registerRealtimeRoutes(router, ctx);
  registerSecurityRoutes(router, ctx);
  registerPeopleRoutes(router, ctx);
  registerApiConsoleRoutes(router, ctx);
  registerApiDocsRoutes(router, ctx);
  registerServerRoutes(router, ctx);
  registerPerformanceRoutes(router, ctx);
  registerFromParseRoutes(router, ctx);
  registerHistoryRoutes(router, ctx);
  registerLogRoutes(router, ctx);
}
