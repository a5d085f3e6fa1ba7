import type { History } from '../../data/history.ts';
import type { Router } from '../router.ts';

/**
 * The row history (docs/protocol.md#row-history), master key only (decided in data/history.ts):
 * versions of a row and of a class, a row at a time, revert and restore.
 */
export function registerHistoryRoutes(router: Router, history: History): void {
  router.add('GET', '/history/:className', async (req) => ({
    body: { results: await history.ofClass(req.ctx, req.params.className!, req.query) },
  }));

  router.add('GET', '/history/:className/:objectId', async (req) => ({
    body: {
      results: await history.ofRow(req.ctx, req.params.className!, req.params.objectId!, req.query),
    },
  }));

  router.add('GET', '/history/:className/:objectId/at', async (req) => ({
    body: { result: await history.at(req.ctx, req.params.className!, req.params.objectId!, req.query) },
  }));

  router.add('POST', '/history/:className/:objectId/revert', async (req) => ({
    body: await history.revert(req.ctx, req.params.className!, req.params.objectId!, req.body),
  }));

  router.add('POST', '/history/:className/:objectId/restore', async (req) => ({
    status: 201,
    body: await history.restore(req.ctx, req.params.className!, req.params.objectId!, req.body),
  }));
}
