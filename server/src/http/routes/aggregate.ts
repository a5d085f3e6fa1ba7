import { isObject } from '@bds/client/protocol';
import type { Data } from '../../data/data.ts';
import type { Ctx } from '../../kernel/context.ts';
import type { Router } from '../router.ts';

/**
 * POST /aggregate/<C> `{pipeline}` (GET with a `pipeline` parameter too), or `{distinct, where?}`
 * (the SDKs' Query.distinct): master only (data/ checks).
 */
export function registerAggregateRoutes(router: Router, data: Data): void {
  const answer = async (ctx: Ctx, className: string, params: Record<string, unknown>) => ({
    body: {
      results:
        params.distinct !== undefined
          ? await data.aggregate.distinct(ctx, className, params.distinct, params.where)
          : await data.aggregate.run(ctx, className, params.pipeline),
    },
  });
  router.add('POST', '/aggregate/:className', async (req) =>
    answer(req.ctx, req.params.className!, isObject(req.body) ? req.body : {}),
  );
  router.add('GET', '/aggregate/:className', async (req) =>
    answer(req.ctx, req.params.className!, req.query),
  );
}
