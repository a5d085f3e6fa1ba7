import { isObject } from '@bds/client/protocol';
import { demandMaster } from '../../data/authorize.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { QueryPerformance } from '../../storage/performance.ts';
import type { ApiRequest, Router } from '../router.ts';

/** The master-only surface decider, as on every other master-only route. */
function requireMaster(req: ApiRequest): void {
  demandMaster(req.ctx.caller, 'performance');
}

/** A store that records nothing answers as one that saw nothing. */
const NOTHING: QueryPerformance = {
  report: () => ({ shapes: [], indexes: [] }),
  build: async (shape) => {
    throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No query shape ${shape} was seen.`);
  },
  drop: async (name) => {
    throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No automatic index is named ${name}.`);
  },
  tick: async () => undefined,
};

/**
 * The Performance API (docs/protocol.md#performance), master key only: the shapes of finds with
 * their counts and times and the index serving each, and the automatic indexes; a master may
 * build the index of a shape that scans, or drop an automatic index.
 */
export function registerPerformanceRoutes(router: Router, store: QueryPerformance | undefined): void {
  const performance = store ?? NOTHING;

  router.add('GET', '/performance/queries', async (req) => {
    requireMaster(req);
    const { shapes, indexes } = performance.report();
    const scanning = req.query.scanning === 'true';
    return { body: { results: scanning ? shapes.filter((s) => s.index === null) : shapes, indexes } };
  });

  router.add('POST', '/performance/indexes', async (req) => {
    requireMaster(req);
    const body = req.body;
    if (!isObject(body) || typeof body.shape !== 'string' || body.shape === '')
      throw new BdsError(
        ErrorCode.INVALID_JSON,
        'The body must be {"shape": "<a shape of GET /performance/queries>"}.',
      );
    return { status: 201, body: await performance.build(body.shape) };
  });

  router.add('DELETE', '/performance/indexes/:name', async (req) => {
    requireMaster(req);
    await performance.drop(req.params.name!);
    return { body: {} };
  });
}
