import { isObject, responseHeader } from '@bds/client/protocol';
import type { Cloud } from '../../cloud/index.ts';
import { demandMaster } from '../../data/authorize.ts';
import type { Jobs } from '../../jobs/index.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { Router } from '../router.ts';

/** A function's or job's params: the JSON object body (none: `{}`). */
function paramsOf(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (!isObject(body)) throw new BdsError(ErrorCode.INVALID_JSON, 'The params must be a JSON object.');
  return body;
}

/**
 * POST /functions/<name>, POST /jobs/<name>, GET /cloudCode (master: what is registered),
 * GET /cloud_code/jobs/data (master: the jobs, as the incumbent lists them).
 */
export function registerCloudRoutes(router: Router, cloud: Cloud, jobs: Jobs): void {
  router.add('POST', '/functions/:name', async (req) => {
    const result = await cloud.functions.call(req.ctx, req.params.name!, paramsOf(req.body));
    // A function that returns nothing answers `{}`, as the incumbent does (its SDKs then yield
    // undefined); `null` is a value like any other.
    return { body: result === undefined ? {} : { result } };
  });

  router.add('POST', '/jobs/:name', async (req) => {
    const { caller } = req.ctx;
    if (!caller.isMaster && !caller.user) {
      throw new BdsError(
        ErrorCode.OPERATION_FORBIDDEN,
        'Permission denied: a job runs with the master key or a session token.',
        403,
      );
    }
    const id = await jobs.runner.start(req.params.name!, paramsOf(req.body), caller, { source: 'api' });
    return { body: {}, headers: responseHeader('jobStatusId', id) };
  });

  router.add('GET', '/cloud_code/jobs/data', async (req) => {
    demandMaster(req.ctx.caller, 'cloudCode');
    return { body: await jobs.listed() };
  });

  router.add('GET', '/cloudCode', async (req) => {
    demandMaster(req.ctx.caller, 'cloudCode');
    return {
      body: { ...cloud.registry.describe(), webhookFunctions: cloud.webhooks.registry.listFunctions() },
    };
  });
}
