import { demandMaster } from '../../data/authorize.ts';
import { listDevMailbox } from '../../email/dev-mailbox.ts';
import type { Router } from '../router.ts';

/** GET /devMailbox (master only): the mails the dev mailbox adapter stored, oldest first. */
export function registerEmailRoutes(router: Router, dataDir: string): void {
  router.add('GET', '/devMailbox', async (req) => {
    demandMaster(req.ctx.caller, 'devMailbox');
    return { body: { results: await listDevMailbox(dataDir) } };
  });
}
