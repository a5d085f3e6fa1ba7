import { isObject, normalPath } from '@bds/client/protocol';
import { z } from 'zod';
import type { Core } from '../../data/core.ts';
import type { Ctx } from '../../kernel/context.ts';
import { BdsError, ErrorCode, toBdsError } from '../../kernel/errors.ts';
import { parseInput } from '../../kernel/validate.ts';
import { type ApiRequest, belowMount, type Method, type Router, requestPath } from '../router.ts';

const BATCH_SHAPE = 'A batch takes {requests: [{method, path, body}]}.';
const batchBody = z.object(
  {
    requests: z.array(z.unknown(), { error: BATCH_SHAPE }),
    transaction: z.boolean({ error: 'transaction must be a boolean.' }).optional(),
  },
  { error: BATCH_SHAPE },
);

const METHODS = ['GET', 'POST', 'PUT', 'DELETE'] as const;
const member = (index: number) =>
  z.object(
    {
      method: z
        .string({ error: `Batch request ${index} needs a method and a path.` })
        .transform((m) => m.toUpperCase())
        .pipe(z.enum(METHODS, { error: (iss) => `Batch request ${index} has method ${String(iss.input)}.` })),
      path: z.string({ error: `Batch request ${index} needs a method and a path.` }),
      body: z.unknown().optional(),
    },
    { error: `Batch request ${index} needs a method and a path.` },
  );

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
    const body = parseInput(batchBody, req.body, ErrorCode.INVALID_JSON);
    const limit = core.options.requestComplexity.batchRequestLimit;
    if (!req.ctx.caller.isMaster && limit >= 0 && body.requests.length > limit) {
      throw new BdsError(
        ErrorCode.INVALID_JSON,
        `Batch request count of ${body.requests.length} exceeds the maximum of ${limit}.`,
      );
    }
    // Every member is checked before any runs: a malformed batch changes nothing.
    const mount = requestPath(core.options.mountPath);
    const subs = body.requests.map((r, i) => parseSubRequest(r, i, mount));

    const member: Ctx = { ...req.ctx, source: 'batch' };
    const run = (sub: SubRequest) => {
      const request: Omit<ApiRequest, 'params'> = {
        method: sub.method,
        path: sub.path,
        query: sub.query,
        body: sub.body,
        ctx: member,
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

/**
 * A member's path below the mount path: its normal form first, then the mount path taken off, so
 * `/api//login`, `//api/login` and `login` are all `/login`. A path without a normal form (a
 * malformed %-escape) is left as written: dispatching it answers that member with 400.
 */
function memberPath(given: string, mount: string): string {
  const normal = normalPath(given);
  if (normal === undefined) return given;
  return belowMount(normal, mount) ?? normal;
}

function parseSubRequest(raw: unknown, index: number, mount: string): SubRequest {
  const { method, path: given, body: rawBody } = parseInput(member(index), raw, ErrorCode.INVALID_JSON);
  const q = given.indexOf('?');
  const path = memberPath(q < 0 ? given : given.slice(0, q), mount);
  const search = q < 0 ? '' : given.slice(q + 1);
  const query: Record<string, unknown> = search ? Object.fromEntries(new URLSearchParams(search)) : {};
  let body = rawBody;
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
  return { method, path, query, body };
}
