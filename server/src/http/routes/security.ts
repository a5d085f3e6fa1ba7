import type { CallerResolver } from '../../auth/caller.ts';
import { demandMaster } from '../../data/authorize.ts';
import type { Data } from '../../data/data.ts';
import { ctxOf } from '../../kernel/context.ts';
import { toBdsError } from '../../kernel/errors.ts';
import { invalid, parseViewpoint, SecurityQueries } from '../../security/queries.ts';
import type { ApiRequest, ApiResponse, Method, Router } from '../router.ts';

const ALIASES: Record<string, string> = {
  users: '_User',
  roles: '_Role',
  installations: '_Installation',
  sessions: '_Session',
};
const PATH = /^\/(?:classes\/([^/]+)|(users|roles|installations|sessions))(?:\/([^/]+))?$/;
/** The session token of an evaluated signed-in viewpoint: a placeholder that names no session. */
const VIEWPOINT_SESSION = '(viewpoint: no session)';
const METHODS = new Set<Method>(['GET', 'POST', 'PUT', 'DELETE']);
const OPS: Record<string, 'create' | 'update' | 'delete'> = {
  POST: 'create',
  PUT: 'update',
  DELETE: 'delete',
};

/** The master-only surface decider, as on every other master-only route. */
function requireMaster(req: ApiRequest): void {
  demandMaster(req.ctx.caller, 'security');
}

/** Query parameters as a REST request carries them: strings, with JSON for anything else. */
function queryOf(raw: unknown): Record<string, unknown> {
  if (raw === undefined) return {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw invalid('query must be an object.');
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}

/**
 * The Security API (docs/security-api.md), master key only: explain an access question, evaluate
 * a request with a viewpoint's permissions (reads as they are, writes as dry runs), the effective
 * class-layer rules of a class, and the impact of a permission draft.
 */
export function registerSecurityRoutes(router: Router, data: Data, callers: CallerResolver): void {
  const security = new SecurityQueries(data, (userId, sessionToken) =>
    callers.forUser(userId, sessionToken === undefined ? {} : { sessionToken }),
  );

  router.add('POST', '/security/explain', async (req) => {
    requireMaster(req);
    return { body: await security.explain(req.body) };
  });

  router.add('POST', '/security/evaluate', async (req) => {
    requireMaster(req);
    const body = req.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw invalid('The request body must be a JSON object.');
    const input = body as Record<string, unknown>;
    const unknown = Object.keys(input).find(
      (k) => !['viewpoint', 'method', 'path', 'query', 'body'].includes(k),
    );
    if (unknown) throw invalid(`Unknown key: ${unknown}.`);
    const method = input.method as Method;
    if (!METHODS.has(method)) throw invalid('method must be GET, POST, PUT or DELETE.');
    const path = typeof input.path === 'string' ? input.path : '';
    const match = PATH.exec(path);
    if (!match)
      throw invalid(
        'path must be /classes/<C>, /classes/<C>/<id>, /users, /users/<id>, /roles, /roles/<id>, ' +
          '/installations, /installations/<id>, /sessions or /sessions/<id>.',
      );
    const viewpoint = parseViewpoint(input.viewpoint);
    const query = queryOf(input.query);
    const { caller } = await security.callerOf(viewpoint, VIEWPOINT_SESSION);
    let className: string;
    try {
      className = match[1] ? decodeURIComponent(match[1]) : ALIASES[match[2]!]!;
    } catch {
      throw invalid(`Malformed path segment: ${match[1]}`);
    }
    const objectId = match[3];
    const started = performance.now();
    const dispatch = () =>
      router.dispatch({
        method,
        path,
        query,
        body: method === 'GET' || method === 'DELETE' ? undefined : input.body,
        ctx: ctxOf(caller, 'rest'),
        inBatch: false,
      });
    const ms = () => Math.round((performance.now() - started) * 100) / 100;
    if (method === 'GET') {
      try {
        const res = await dispatch();
        return { body: { status: res.status ?? 200, body: res.body, dryRun: false, ms: ms() } };
      } catch (err) {
        const e = toBdsError(err);
        return { body: { status: e.httpStatus, body: e.toJSON(), dryRun: false, ms: ms() } };
      }
    }
    const outcome = await security.dryRun<ApiResponse>(className, objectId, dispatch, (res) => {
      const id = (res.body as Record<string, unknown> | undefined)?.objectId;
      return typeof id === 'string' ? id : undefined;
    });
    if ('error' in outcome) {
      return {
        body: { status: outcome.error.httpStatus, body: outcome.error.toJSON(), dryRun: true, ms: ms() },
      };
    }
    const res = outcome.result;
    const created = (res.body as Record<string, unknown> | undefined)?.objectId;
    return {
      body: {
        status: res.status ?? 200,
        body: res.body,
        dryRun: true,
        ms: ms(),
        wouldHave: {
          op: OPS[method],
          className,
          objectId: objectId ?? (typeof created === 'string' ? created : null),
          before: outcome.before,
          after: outcome.after,
        },
      },
    };
  });

  router.add('POST', '/security/rules', async (req) => {
    requireMaster(req);
    return { body: security.rules(req.body) };
  });

  router.add('POST', '/security/impact', async (req) => {
    requireMaster(req);
    return { body: await security.impact(req.body) };
  });
}
