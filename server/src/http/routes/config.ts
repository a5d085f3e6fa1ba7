import type { Core } from '../../data/core.ts';
import { BdsError, ErrorCode, masterKeyRequired } from '../../errors.ts';
import type { Router } from '../router.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const PARAM_NAME = /^[A-Za-z0-9_.-]{1,200}$/;

/** GET /config (masterKeyOnly entries hidden from non-master callers), PUT /config (master). */
export function registerConfigRoutes(router: Router, core: Core): void {
  router.add('GET', '/config', async (req) => {
    const config = await core.store.getConfig();
    if (req.auth.isMaster) return { body: { params: config.params, masterKeyOnly: config.masterKeyOnly } };
    const params: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(config.params)) if (!config.masterKeyOnly[k]) params[k] = v;
    return { body: { params } };
  });
  router.add('PUT', '/config', async (req) => {
    if (!req.auth.isMaster) throw masterKeyRequired();
    const body = req.body;
    if (!isObject(body) || !isObject(body.params)) {
      throw new BdsError(ErrorCode.INVALID_JSON, 'PUT /config takes {params: {...}, masterKeyOnly?: {...}}.');
    }
    const flags = body.masterKeyOnly ?? {};
    if (!isObject(flags) || !Object.values(flags).every((v) => typeof v === 'boolean')) {
      throw new BdsError(ErrorCode.INVALID_JSON, 'masterKeyOnly must map parameter names to booleans.');
    }
    for (const name of [...Object.keys(body.params), ...Object.keys(flags)]) {
      if (!PARAM_NAME.test(name))
        throw new BdsError(ErrorCode.INVALID_KEY_NAME, `Invalid config parameter name: ${name}.`);
    }
    await core.store.transaction(async () => {
      const config = await core.store.getConfig();
      for (const [k, v] of Object.entries(body.params as Record<string, unknown>)) {
        if (isObject(v) && v.__op === 'Delete') {
          delete config.params[k];
          delete config.masterKeyOnly[k];
        } else {
          config.params[k] = v;
        }
      }
      for (const [k, v] of Object.entries(flags)) {
        if (v) config.masterKeyOnly[k] = true;
        else delete config.masterKeyOnly[k];
      }
      await core.store.setConfig(config);
    });
    return { body: { result: true } };
  });
}
