import { demandMaster } from '../../data/authorize.ts';
import type { Webhooks } from '../../hooks/webhooks.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { ApiRequest, Router } from '../router.ts';

const FILTERS = ['kind', 'hook', 'className', 'triggerName', 'functionName', 'status'] as const;

/**
 * /hooks (master only): function and trigger webhooks (`_Hooks`), and the delivery log.
 * POST registers, PUT `{url}` changes the receiver, PUT `{"__op":"Delete"}` or DELETE removes.
 */
export function registerHookRoutes(router: Router, webhooks: Webhooks): void {
  const hooks = webhooks.registry;
  const master =
    (handler: (req: ApiRequest) => Promise<{ status?: number; body: unknown }>) =>
    async (req: ApiRequest) => {
      demandMaster(req.ctx.caller, 'hooks');
      return handler(req);
    };

  router.add(
    'GET',
    '/hooks/functions',
    master(async () => ({ body: { results: hooks.listFunctions() } })),
  );
  router.add(
    'GET',
    '/hooks/functions/:name',
    master(async (req) => ({ body: hooks.getFunction(req.params.name!) })),
  );
  router.add(
    'POST',
    '/hooks/functions',
    master(async (req) => ({ status: 201, body: await hooks.createFunction(req.body) })),
  );
  router.add(
    'PUT',
    '/hooks/functions/:name',
    master(async (req) => ({ body: (await hooks.changeFunction(req.params.name!, req.body)) ?? {} })),
  );
  router.add(
    'DELETE',
    '/hooks/functions/:name',
    master(async (req) => ({
      body: (await hooks.changeFunction(req.params.name!, { __op: 'Delete' })) ?? {},
    })),
  );

  router.add(
    'GET',
    '/hooks/triggers',
    master(async () => ({ body: { results: hooks.listTriggers() } })),
  );
  router.add(
    'GET',
    '/hooks/triggers/:className/:triggerName',
    master(async (req) => ({ body: hooks.getTrigger(req.params.className!, req.params.triggerName!) })),
  );
  router.add(
    'POST',
    '/hooks/triggers',
    master(async (req) => ({ status: 201, body: await hooks.createTrigger(req.body) })),
  );
  router.add(
    'PUT',
    '/hooks/triggers/:className/:triggerName',
    master(async (req) => ({
      body: (await hooks.changeTrigger(req.params.className!, req.params.triggerName!, req.body)) ?? {},
    })),
  );
  router.add(
    'DELETE',
    '/hooks/triggers/:className/:triggerName',
    master(async (req) => ({
      body:
        (await hooks.changeTrigger(req.params.className!, req.params.triggerName!, { __op: 'Delete' })) ?? {},
    })),
  );

  router.add(
    'GET',
    '/hooks/deliveries',
    master(async (req) => {
      const filter: Record<string, string | number> = {};
      for (const [key, value] of Object.entries(req.query)) {
        if (key === 'limit') continue;
        if (!(FILTERS as readonly string[]).includes(key)) {
          throw new BdsError(
            ErrorCode.INVALID_QUERY,
            `Unknown filter ${key}: use ${FILTERS.join(', ')} or limit.`,
          );
        }
        filter[key] = String(value);
      }
      if (req.query.limit !== undefined) {
        const limit = Number(req.query.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
          throw new BdsError(ErrorCode.INVALID_QUERY, 'limit must be a whole number from 1 to 1000.');
        }
        filter.limit = limit;
      }
      return { body: { results: webhooks.deliveries.list(filter) } };
    }),
  );
}
