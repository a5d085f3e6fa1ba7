/**
 * Records: find, get, create, update, delete, batches of them, and aggregation. The paths of the
 * built-in classes are their aliases (`/users`, `/roles`, `/sessions`, `/installations`) for
 * writes; a find goes to `/classes/<C>`.
 */
import { type AuthOptions, checkAuthOptions, type Result } from '../options.ts';
import type { RequestCore } from '../request-core.ts';
import { classOfPath } from '../response-cache.ts';

export interface QueryParams {
  where?: Record<string, unknown>;
  order?: string;
  limit?: number;
  skip?: number;
  keys?: string;
  excludeKeys?: string;
  include?: string;
  count?: boolean;
}

export interface BatchRequest {
  method: 'POST' | 'PUT' | 'DELETE' | 'GET';
  path: string;
  body?: unknown;
}

export type BatchItem = { success: any } | { error: { code: number; error: string } };

export const BATCH_SEGMENT = 50;

function classPath(className: string): string {
  if (className === '_User') return '/users';
  if (className === '_Role') return '/roles';
  if (className === '_Session') return '/sessions';
  if (className === '_Installation') return '/installations';
  return `/classes/${encodeURIComponent(className)}`;
}

/** The path of a class, or of one of its rows. */
export function recordPath(className: string, objectId?: string): string {
  const base = classPath(className);
  return objectId ? `${base}/${encodeURIComponent(objectId)}` : base;
}

export async function find<T = any>(
  core: RequestCore,
  className: string,
  params: QueryParams,
  options: AuthOptions,
) {
  const { count, ...rest } = params;
  const query: Record<string, unknown> = { ...rest };
  if (count) query.count = 1;
  return core.request<{ results: T[]; count?: number }>('GET', `/classes/${encodeURIComponent(className)}`, {
    ...checkAuthOptions(options),
    query,
  });
}

export async function get<T = any>(
  core: RequestCore,
  className: string,
  objectId: string,
  options: AuthOptions & { include?: string; keys?: string },
) {
  const { include, keys } = options;
  return core.request<T>('GET', `/classes/${encodeURIComponent(className)}/${encodeURIComponent(objectId)}`, {
    ...checkAuthOptions(options),
    query: { include, keys },
  });
}

export async function create<T = any>(
  core: RequestCore,
  className: string,
  fields: Record<string, unknown>,
  options: AuthOptions,
) {
  return core.request<T>('POST', recordPath(className), { ...checkAuthOptions(options), body: fields });
}

export async function update<T = any>(
  core: RequestCore,
  className: string,
  objectId: string,
  fields: Record<string, unknown>,
  options: AuthOptions,
) {
  return core.request<T>('PUT', recordPath(className, objectId), {
    ...checkAuthOptions(options),
    body: fields,
  });
}

export async function destroy(core: RequestCore, className: string, objectId: string, options: AuthOptions) {
  return core.request<Record<string, never>>(
    'DELETE',
    recordPath(className, objectId),
    checkAuthOptions(options),
  );
}

/** POST /batch in segments of `BATCH_SEGMENT`; the answers are concatenated in order. */
export async function batch(
  core: RequestCore,
  requests: BatchRequest[],
  options: AuthOptions,
): Promise<Result<BatchItem[]>> {
  const auth = checkAuthOptions(options);
  const out: BatchItem[] = [];
  let status = 200;
  for (let i = 0; i < requests.length; i += BATCH_SEGMENT) {
    const segment = requests.slice(i, i + BATCH_SEGMENT);
    const res = await core.request<BatchItem[]>('POST', '/batch', { ...auth, body: { requests: segment } });
    if (!res.success) return res;
    for (const r of segment) if (r.method !== 'GET') core.invalidateClass(classOfPath(r.path));
    status = res.status;
    out.push(...res.data);
  }
  return { success: true, status, data: out };
}

/** POST /aggregate/<C>, master only: refused locally without a usable master key. */
export async function aggregate<T = any>(
  core: RequestCore,
  className: string,
  pipeline: Array<Record<string, unknown>>,
  options: AuthOptions,
) {
  checkAuthOptions(options);
  core.requireMaster('aggregate');
  return core.request<{ results: T[] }>('POST', `/aggregate/${encodeURIComponent(className)}`, {
    useMasterKey: true,
    body: { pipeline },
  });
}
