/**
 * Cloud code: functions (POST /functions/<name>) and jobs (POST /jobs/<name>, then their
 * `_JobStatus` row, polled until the job is done).
 */
import { CloudCodeError } from '../errors.ts';
import { type AuthOptions, checkAuthOptions } from '../options.ts';
import { RESPONSE_HEADERS } from '../protocol/headers.ts';
import type { JobStatus } from '../protocol/hooks.ts';
import type { RequestCore } from '../request-core.ts';
import * as records from './records.ts';

export type { JobStatus } from '../protocol/hooks.ts';

/** POST /functions/<name>: the one request both ways of calling a function send. */
function postFunction<T>(
  core: RequestCore,
  name: string,
  params: Record<string, unknown>,
  options: AuthOptions,
) {
  return core.request<{ result: T }>('POST', `/functions/${encodeURIComponent(name)}`, {
    ...checkAuthOptions(options),
    body: params,
  });
}

/** Answers `null` on failure. */
export async function callFunction<T = any>(
  core: RequestCore,
  name: string,
  params: Record<string, unknown>,
  options: AuthOptions,
) {
  const res = await postFunction<T>(core, name, params, options);
  return res.success ? res.data.result : null;
}

/** Throws CloudCodeError carrying the response on failure. */
export async function callFunctionOrThrow<T = any>(
  core: RequestCore,
  name: string,
  params: Record<string, unknown>,
  options: AuthOptions,
) {
  const res = await postFunction<T>(core, name, params, options);
  if (!res.success)
    throw new CloudCodeError(res.error, { code: res.code, status: res.status, response: res });
  return res.data.result;
}

/** Starts a job and answers its `_JobStatus` id (from the answer's header). */
export async function runJob(
  core: RequestCore,
  name: string,
  params: Record<string, unknown>,
  options: AuthOptions,
): Promise<string> {
  let statusId: string | null = null;
  const res = await core.request('POST', `/jobs/${encodeURIComponent(name)}`, {
    ...checkAuthOptions(options),
    body: params,
    onHeaders: (headers) => {
      statusId = headers.get(RESPONSE_HEADERS.jobStatusId);
    },
  });
  if (!res.success)
    throw new CloudCodeError(res.error, { code: res.code, status: res.status, response: res });
  if (!statusId) throw new CloudCodeError(`POST /jobs/${name} answered no job status id.`, { response: res });
  return statusId;
}

/** A job's `_JobStatus` row, read with the master key (the class is master-only). */
export async function jobStatus(core: RequestCore, statusId: string, options: AuthOptions) {
  return records.get<JobStatus>(core, '_JobStatus', statusId, {
    ...checkAuthOptions(options),
    useMasterKey: true,
  });
}

export async function waitForJob(
  core: RequestCore,
  statusId: string,
  options: AuthOptions & { intervalMs?: number; timeoutMs?: number },
): Promise<JobStatus> {
  const { intervalMs = 500, timeoutMs = 60_000, ...auth } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await jobStatus(core, statusId, auth);
    if (!res.success)
      throw new CloudCodeError(res.error, { code: res.code, status: res.status, response: res });
    if (res.data.status !== 'running') return res.data;
    if (Date.now() + intervalMs > deadline) {
      throw new CloudCodeError(`Job ${statusId} is still running after ${timeoutMs} ms.`, {
        response: res,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
