import { listDevMailbox } from '../../email/dev-mailbox.ts';
import { masterKeyRequired } from '../../kernel/errors.ts';
import type { Router } from '../router.ts';

/** GET /devMailbox (master only): the mails the dev mailbox adapter stored, oldest first. */
export function registerEmailRoutes(router: Router, dataDir: string): void {
  router.add('GET', '/devMailbox', async (req) => {
    if (!req.ctx.caller.isMaster) throw masterKeyRequired();
    return { body: { results: await listDevMailbox(dataDir) } };
  });
}
