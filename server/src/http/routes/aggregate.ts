import { isObject } from '@bds/client/protocol';
import type { Data } from '../../data/data.ts';
import type { Router } from '../router.ts';

/** POST /aggregate/<C> `{pipeline}` (GET with a `pipeline` parameter too): master only (data/ checks). */
export function registerAggregateRoutes(router: Router, data: Data): void {
  router.add('POST', '/aggregate/:className', async (req) => {
    const pipeline = isObject(req.body) ? req.body.pipeline : undefined;
    return { body: { results: await data.aggregate.run(req.ctx, req.params.className!, pipeline) } };
  });
  router.add('GET', '/aggregate/:className', async (req) => ({
    body: { results: await data.aggregate.run(req.ctx, req.params.className!, req.query.pipeline) },
  }));
}
