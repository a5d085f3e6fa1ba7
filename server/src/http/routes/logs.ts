import type { LogsAnswer, RequestLinesAnswer } from '@bds/client/protocol';
import { demandMaster } from '../../data/authorize.ts';
import { parseLogFilter } from '../../logs/filter.ts';
import type { RequestLogs } from '../../logs/request-logs.ts';
import type { Router } from '../router.ts';

/**
 * The request logs (docs/protocol.md#request-logs), master key only: GET /logs lists request lines
 * by the filters, newest first; GET /logs/<requestId> answers every line of one request. A service
 * that keeps no lines (option `requestLogSize` 0) answers none.
 */
export function registerLogRoutes(router: Router, logs: RequestLogs | undefined): void {
  router.add('GET', '/logs', async (req) => {
    demandMaster(req.ctx.caller, 'logs');
    const filter = parseLogFilter(req.query);
    const body: LogsAnswer = { results: logs ? await logs.list(filter) : [] };
    return { body };
  });

  router.add('GET', '/logs/:requestId', async (req) => {
    demandMaster(req.ctx.caller, 'logs');
    const requestId = req.params.requestId!;
    const body: RequestLinesAnswer = { requestId, lines: logs ? await logs.linesOf(requestId) : [] };
    return { body };
  });
}
