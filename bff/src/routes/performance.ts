import { type AutoIndexReport, ErrorCode, type PerformanceReport } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, BffError, bodyOf, param, parse, unwrap } from './http.ts';
import { classOf } from './rows.ts';

/** The bff's own bound on the texts it forwards (a shape, an index name). */
const MAX_TEXT = 2000;

/** A build names a shape of the class in its path (`<Class>|eq:...|range:...|sort:...`). */
const buildBody = (cls: string) =>
  z.strictObject({
    shape: z
      .string()
      .max(MAX_TEXT)
      .refine((shape) => shape.startsWith(`${cls}|`), `must be a query shape of ${cls}`),
  });
const autoIndexName = z.string().min(1).max(MAX_TEXT);

async function report(s: AppScope): Promise<PerformanceReport> {
  return unwrap(
    await s.client.request<PerformanceReport>('GET', '/performance/queries', { useMasterKey: true }),
  );
}

/**
 * The service's Performance API (docs/protocol.md#performance, master only) for the console's
 * Performance page: the query shapes and automatic indexes, which every console user may read;
 * building the index of a shape and dropping an automatic index are changes (the `write`
 * capability), each an audit entry (`index.build`, `index.drop`) whose target is
 * `<Class>.<index name>`, as the schema's declared indexes are.
 */
export function registerPerformanceRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/performance';

  router.get(
    base,
    appRoute(ctx, {}, async (s) => report(s)),
  );

  router.post(
    `${base}/classes/:className/indexes`,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const { shape } = parse(buildBody(cls), bodyOf(s.req), 'index request');
      const index = unwrap(
        await s.client.request<AutoIndexReport>('POST', '/performance/indexes', {
          useMasterKey: true,
          body: { shape },
        }),
      );
      s.audit('index.build', `${cls}.${index.name}`, null, index);
      return index;
    }),
  );

  router.delete(
    `${base}/classes/:className/indexes/:indexName`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const name = parse(autoIndexName, param(s.req, 'indexName'), 'index name');
      const before = (await report(s)).indexes.find((i) => i.name === name && i.className === cls);
      if (!before)
        throw new BffError(404, ErrorCode.OBJECT_NOT_FOUND, `${cls} has no automatic index named ${name}.`);
      unwrap(
        await s.client.request('DELETE', `/performance/indexes/${encodeURIComponent(name)}`, {
          useMasterKey: true,
        }),
      );
      s.audit('index.drop', `${cls}.${name}`, before, null);
      return {};
    }),
  );
}
