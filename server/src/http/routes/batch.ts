import type { Core } from '../../data/core.ts';
import { BdsError, ErrorCode, toBdsError } from '../../errors.ts';
import type { ApiRequest, Method, Router } from '../router.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE']);

interface SubRequest {
  method: Method;
  path: string;
  query: Record<string, unknown>;
  body: unknown;
}

/** POST /batch: sub-requests in order through the same router, with the caller's credentials. */
export function registerBatchRoute(router: Router, core: Core): void {
  router.add('POST', '/batch', async (req) => {
    if (req.inBatch) throw new BdsError(ErrorCode.INVALID_JSON, 'A batch cannot contain another batch.');
    const body = req.body;
    if (!isObject(body) || !Array.isArray(body.requests)) {
      throw new BdsError(ErrorCode.INVALID_JSON, 'A batch takes {requests: [{method, path, body}]}.');
    }
    const limit = core.options.requestComplexity.batchRequestLimit;
    if (!req.auth.isMaster && limit >= 0 && body.requests.length > limit) {
      throw new BdsError(
        ErrorCode.INVALID_JSON,
        `Batch request count of ${body.requests.length} exceeds the maximum of ${limit}.`,
      );
    }
    if (body.transaction !== undefined && typeof body.transaction !== 'boolean') {
      throw new BdsError(ErrorCode.INVALID_JSON, 'transaction must be a boolean.');
    }
    // Every member is checked before any runs: a malformed batch changes nothing.
    const subs = body.requests.map((r, i) => parseSubRequest(r, i, core.options.mountPath));

    const run = (sub: SubRequest) => {
      const request: Omit<ApiRequest, 'params'> = {
        method: sub.method,
        path: sub.path,
        query: sub.query,
        body: sub.body,
        auth: req.auth,
        inBatch: true,
      };
      return router.dispatch(request);
    };

    if (body.transaction === true) {
      const results = await core.store.transaction(async () => {
        const out: unknown[] = [];
        // A failing member throws: the transaction rolls back and the batch answers that error.
        for (const sub of subs) out.push({ success: (await run(sub)).body });
        return out;
      });
      return { body: results };
    }
    const results: unknown[] = [];
    for (const sub of subs) {
      try {
        results.push({ success: (await run(sub)).body });
      } catch (err) {
        results.push({ error: toBdsError(err).toJSON() });
      }
    }
    return { body: results };
  });
}

function parseSubRequest(raw: unknown, index: number, mountPath: string): SubRequest {
  if (!isObject(raw) || typeof raw.method !== 'string' || typeof raw.path !== 'string') {
    throw new BdsError(ErrorCode.INVALID_JSON, `Batch request ${index} needs a method and a path.`);
  }
  const method = raw.method.toUpperCase();
  if (!METHODS.has(method))
    throw new BdsError(ErrorCode.INVALID_JSON, `Batch request ${index} has method ${raw.method}.`);
  let path = raw.path;
  const base = mountPath.replace(/\/+$/, '');
  if (base && (path === base || path.startsWith(`${base}/`))) path = path.slice(base.length);
  if (!path.startsWith('/')) path = `/${path}`;
  const [pathname, search] = path.split('?', 2) as [string, string | undefined];
  const query: Record<string, unknown> = search ? Object.fromEntries(new URLSearchParams(search)) : {};
  let body = raw.body;
  if (method === 'GET') {
    if (body !== undefined && !isObject(body)) {
      throw new BdsError(
        ErrorCode.INVALID_JSON,
        `Batch request ${index}: a GET takes its query as an object body.`,
      );
    }
    Object.assign(query, body ?? {});
    body = undefined;
  }
  return { method: method as Method, path: pathname, query, body };
}
