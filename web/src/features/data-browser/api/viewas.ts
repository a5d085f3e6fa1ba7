/**
 * The data browser's reads and dry-run writes with a viewpoint's permissions, through the shared
 * POST /bff/apps/:appId/security/evaluate (docs/security-api.md). A refusal of the evaluated
 * request is thrown as an ApiError with the service's code and text, as a direct call would be.
 */
import { ApiError } from '../../../lib/api.ts';
import { type Evaluation, securityApi, type Viewpoint } from '../../../lib/security-api.ts';
import type { Row } from '../../../lib/wire.ts';
import type { FindParams, FindResult } from './bff.ts';

const classPath = (cls: string, id?: string) =>
  `/classes/${encodeURIComponent(cls)}${id ? `/${encodeURIComponent(id)}` : ''}`;

/** The evaluated answer's body, or its refusal thrown. */
function bodyOf<T>(answer: Evaluation): T {
  if (answer.status < 300) return answer.body as T;
  const b = (answer.body ?? {}) as { code?: unknown; error?: unknown };
  throw new ApiError(
    answer.status,
    typeof b.code === 'number' ? b.code : 1,
    typeof b.error === 'string' ? b.error : `status ${answer.status}`,
  );
}

export const viewAsApi = {
  find: async (appId: string, cls: string, viewpoint: Viewpoint, p: FindParams): Promise<FindResult> => {
    const query: Record<string, unknown> = {};
    if (p.where && Object.keys(p.where).length) query.where = p.where;
    if (p.order) query.order = p.order;
    if (p.limit !== undefined) query.limit = p.limit;
    if (p.skip) query.skip = p.skip;
    if (p.keys) query.keys = p.keys;
    if (p.include) query.include = p.include;
    if (p.count) query.count = 1;
    return bodyOf(
      await securityApi.evaluate(appId, { viewpoint, method: 'GET', path: classPath(cls), query }),
    );
  },
  count: async (appId: string, cls: string, viewpoint: Viewpoint, where: Record<string, unknown>) => {
    const query: Record<string, unknown> = { count: 1, limit: 0 };
    if (Object.keys(where).length) query.where = where;
    const r = bodyOf<FindResult>(
      await securityApi.evaluate(appId, { viewpoint, method: 'GET', path: classPath(cls), query }),
    );
    return { count: r.count ?? 0 };
  },
  get: async (appId: string, cls: string, viewpoint: Viewpoint, id: string): Promise<Row> =>
    bodyOf(await securityApi.evaluate(appId, { viewpoint, method: 'GET', path: classPath(cls, id) })),
  /** A dry run of an update: checked and validated as the viewpoint, then rolled back. */
  dryRunUpdate: (
    appId: string,
    cls: string,
    viewpoint: Viewpoint,
    id: string,
    body: Record<string, unknown>,
  ) => securityApi.evaluate(appId, { viewpoint, method: 'PUT', path: classPath(cls, id), body }),
};
