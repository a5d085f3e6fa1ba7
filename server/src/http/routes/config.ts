import { CONFIG_PARAMETER_NAME_PATTERN } from '@bds/client/protocol';
import { z } from 'zod';
import { demandMaster } from '../../data/authorize.ts';
import type { Data } from '../../data/data.ts';
import { ErrorCode } from '../../kernel/errors.ts';
import { parseInput } from '../../kernel/validate.ts';
import type { Router } from '../router.ts';

const SHAPE = 'PUT /config takes {params: {...}, masterKeyOnly?: {...}}.';
const FLAGS = 'masterKeyOnly must map parameter names to booleans.';
const names = (record: Record<string, unknown>, ctx: z.RefinementCtx) => {
  for (const name of Object.keys(record)) {
    if (!CONFIG_PARAMETER_NAME_PATTERN.test(name)) {
      ctx.addIssue({
        code: 'custom',
        message: `Invalid config parameter name: ${name}.`,
        params: { code: ErrorCode.INVALID_KEY_NAME },
      });
    }
  }
};
const configChange = z.object(
  {
    params: z.record(z.string(), z.unknown(), { error: SHAPE }).superRefine(names),
    masterKeyOnly: z
      .record(z.string(), z.boolean({ error: FLAGS }), { error: FLAGS })
      .superRefine(names)
      .default({}),
  },
  { error: SHAPE },
);

/** GET /config (masterKeyOnly entries hidden from non-master callers), PUT /config (master). */
export function registerConfigRoutes(router: Router, data: Data): void {
  const { core } = data;
  router.add('GET', '/config', async (req) => {
    const config = await core.store.getConfig();
    if (req.ctx.caller.isMaster)
      return { body: { params: config.params, masterKeyOnly: config.masterKeyOnly } };
    const params: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(config.params)) if (!config.masterKeyOnly[k]) params[k] = v;
    return { body: { params } };
  });
  router.add('PUT', '/config', async (req) => {
    demandMaster(req.ctx.caller, 'config');
    const body = parseInput(configChange, req.body, ErrorCode.INVALID_JSON);
    await data.writes.updateConfig(req.ctx, body.params, body.masterKeyOnly);
    return { body: { result: true } };
  });
}
