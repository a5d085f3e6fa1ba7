import { responseHeader } from '@bds/client/protocol';
import type { PushService } from '../../push/service.ts';
import type { Router } from '../router.ts';

/** POST /push (master only): `{result: true}` and the `_PushStatus` id in a header. */
export function registerPushRoutes(router: Router, push: PushService): void {
  router.add('POST', '/push', async (req) => {
    const id = await push.send(req.ctx, req.body);
    return { body: { result: true }, headers: responseHeader('pushStatusId', id) };
  });
}
