import { FROM_PARSE_PATH } from '@bds/client/protocol';
import { demandMaster } from '../../data/authorize.ts';
import type { FromParseRuns } from '../../transfer/from-parse-runs.ts';
import type { Router } from '../router.ts';

/**
 * Imports from a running parse-server, started in the service (docs/transfer.md, "From the
 * console"), master key only: POST starts one (202, the run), GET answers a run's progress and,
 * once it ended, its summary or error.
 */
export function registerFromParseRoutes(router: Router, runs: FromParseRuns): void {
  router.add('POST', FROM_PARSE_PATH, async (req) => {
    demandMaster(req.ctx.caller, 'importFromParse');
    return { status: 202, body: runs.start(req.body) };
  });

  router.add('GET', `${FROM_PARSE_PATH}/:name`, async (req) => {
    demandMaster(req.ctx.caller, 'importFromParse');
    return { body: runs.get(req.params.name!) };
  });
}
