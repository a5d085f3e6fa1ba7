import { BdsClientError, type Client, ConnectionError, type Result } from '@bds/client';
import { ErrorCode, HEADERS } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import { apiConsoleRefusal } from '../capabilities.ts';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, BffError, bodyOf, hideCredentials, parse, unwrap } from './http.ts';
import { jsonObject, objectId } from './schemas-edge.ts';

/**
 * The API console: one REST call composed in the console, sent by the bff.
 *
 * - as master: the bff calls the service with the master key (the key never leaves the bff);
 * - as a user: the service's POST /security/evaluate runs the call with that user's permissions
 *   (no session, no password); writes are dry runs, rolled back;
 * - as anonymous: reads go straight to the service with the application keys only (no master
 *   key, no session), so every read path works as a real client's would; writes go to
 *   /security/evaluate as dry runs.
 *
 * What a console user may send is capabilities.ts's `apiConsoleRefusal` (checked here, not by the
 * foundation's guard, because the outer request is always a POST): without `write`, GET only and
 * no GET that changes something; without `readSecrets`, no path that hands out secrets, no query
 * on a secret field (appRoute), and the answer filtered (appRoute).
 */

export const API_CONSOLE_METHODS = ['GET', 'POST', 'PUT', 'DELETE'] as const;
export type ApiConsoleMethod = (typeof API_CONSOLE_METHODS)[number];

/** Path characters the console accepts: RFC 3986 pchar without the ones that end a path. */
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]+$/;

/** A path under the service's mount (`/classes/Post`), never a URL, a host or a way out of it. */
export const servicePath = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .superRefine((p, ctx) => {
    const problem = pathProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

function pathProblem(p: string): string | null {
  if (p === '') return 'must not be empty';
  if (!p.startsWith('/'))
    return "must start with / (a path under the service's REST API, e.g. /classes/Post; no absolute URL)";
  if (p.startsWith('//')) return 'must not start with // (no host)';
  if (/[?#]/.test(p)) return 'must not carry a query string or fragment (put parameters in query)';
  if (!PATH_CHARS.test(p)) return 'must contain only URL path characters (no spaces, backslashes or quotes)';
  const segments = p.slice(1).split('/');
  for (const segment of segments) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return 'must be validly percent-encoded';
    }
    if (segment === '' || decoded === '') return 'must not contain empty segments';
    if (decoded === '.' || decoded === '..') return 'must not contain . or .. segments';
    if (/[/\\]/.test(decoded)) return 'must not encode / or \\ inside a segment';
    if (/\p{Cc}/u.test(decoded)) return 'must not contain control characters';
  }
  return null;
}

/** Body fields the service reads as credentials or as a method override (the `_method` form). */
const BODY_OVERRIDES = [
  '_method',
  '_ApplicationId',
  '_JavaScriptKey',
  '_ClientKey',
  '_RestAPIKey',
  '_MasterKey',
  '_SessionToken',
  '_InstallationId',
];

/**
 * A query-string parameter the API console passes on (`where`, `limit`, a function's own): letters,
 * digits and `_`, not starting with a digit, at most 64 characters. The console's own bound on
 * what it forwards, not a name the protocol defines.
 */
const isParameterName = (name: string): boolean => name.length <= 64 && /^[A-Za-z_]\w*$/.test(name);
const paramValue = z.union([
  z.string().max(100_000),
  z.number(),
  z.boolean(),
  jsonObject,
  z.array(z.unknown()),
]);

const viewpoint = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('master') }),
  z.strictObject({ kind: z.literal('user'), userId: objectId }),
  z.strictObject({ kind: z.literal('anonymous') }),
]);
export type ApiConsoleAs = z.output<typeof viewpoint>;

export const apiCallBody = z
  .strictObject({
    method: z.enum(API_CONSOLE_METHODS),
    path: servicePath,
    query: z.record(z.string(), paramValue).default({}),
    body: z.union([jsonObject, z.array(z.unknown())]).optional(),
    as: viewpoint,
  })
  .superRefine((call, ctx) => {
    for (const name of Object.keys(call.query)) {
      if (!isParameterName(name))
        ctx.addIssue({
          code: 'custom',
          path: ['query'],
          message: `${JSON.stringify(name)} is not a parameter name (letters, digits, underscores)`,
        });
    }
    if (call.method === 'GET' && call.body !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['body'],
        message: 'a GET carries no body (put parameters in query)',
      });
    if (call.body && !Array.isArray(call.body)) {
      const found = BODY_OVERRIDES.filter((k) => k in (call.body as object));
      if (found.length)
        ctx.addIssue({
          code: 'custom',
          path: ['body'],
          message: `must not carry ${found.join(', ')} (who the call runs as is chosen with "as")`,
        });
    }
  });
export type ApiCall = z.output<typeof apiCallBody>;

/** The paths POST /security/evaluate runs (docs/security-api.md). */
const EVALUATE_PATH = /^\/(?:classes\/[^/]+|users|roles|installations|sessions)(?:\/[^/]+)?$/;
export const EVALUATE_PATHS =
  '/classes/<C>, /classes/<C>/<id>, /users, /users/<id>, /users/me (as a user), /roles, /roles/<id>, ' +
  '/installations, /installations/<id>, /sessions, /sessions/<id>';

export { READ_ONLY_REFUSAL } from '../capabilities.ts';

/** What the console shows for one call. */
export interface ApiCallAnswer {
  status: number;
  /** The protocol code of an error answer. */
  code?: number;
  body: unknown;
  /** Round trip between the bff and the service, in milliseconds. */
  ms: number;
  /** True when the call was a write evaluated and rolled back: nothing changed. */
  dryRun: boolean;
  /** For a dry run that would have succeeded: what would have happened. */
  wouldHave?: unknown;
  /** How the bff sent it: with the master key, through /security/evaluate, or with application keys only. */
  via: 'master-key' | 'security-evaluate' | 'application-keys';
}

const round = (ms: number) => Math.round(ms * 10) / 10;

function errorCodeOf(status: number, body: unknown): number | undefined {
  if (status < 400) return undefined;
  const code = (body as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * Sends a call straight to the service and answers what the service answered, errors included:
 * the client library throws for 401/403/5xx and invalid sessions, which here are results to show.
 */
async function direct(
  client: Client,
  call: ApiCall,
  auth: { useMasterKey: true } | { sessionToken: '' },
): Promise<{ status: number; body: unknown }> {
  let res: Result<unknown>;
  try {
    res = await client.request(call.method, call.path, {
      ...auth,
      query: call.query,
      ...(call.body !== undefined ? { body: call.body } : {}),
    });
  } catch (err) {
    if (err instanceof ConnectionError || !(err instanceof BdsClientError) || err.status === undefined)
      throw err;
    return { status: err.status, body: { code: err.code ?? err.status, error: err.message } };
  }
  if (res.success) return { status: res.status, body: res.data ?? null };
  return { status: res.status, body: { code: res.code, error: res.error } };
}

/** Query values as the evaluate endpoint takes them: JSON typed in a text box is parsed. */
function typedQuery(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) {
    if (typeof v !== 'string') {
      out[k] = v;
      continue;
    }
    try {
      const parsed: unknown = JSON.parse(v);
      out[k] = parsed !== null && typeof parsed !== 'string' ? parsed : v;
    } catch {
      out[k] = v;
    }
  }
  return out;
}

interface EvaluateAnswer {
  status: number;
  body: unknown;
  dryRun: boolean;
  ms?: number;
  wouldHave?: unknown;
}

async function evaluate(client: Client, call: ApiCall): Promise<EvaluateAnswer> {
  let path = call.path;
  if (call.as.kind === 'user' && call.method === 'GET' && path === '/users/me') {
    // "me" of a call as a user is that user's row: no session exists to resolve it from.
    path = `/users/${encodeURIComponent(call.as.userId)}`;
  }
  if (!EVALUATE_PATH.test(path) || path === '/users/me') {
    const who = call.as.kind === 'user' ? 'as a user' : 'as anonymous (writes)';
    throw new BffError(
      400,
      ErrorCode.INVALID_JSON,
      `A call ${who} supports only these paths: ${EVALUATE_PATHS}. Send ${call.method} ${call.path} as master.`,
    );
  }
  const viewpointOf =
    call.as.kind === 'user' ? { kind: 'user', userId: call.as.userId } : { kind: 'anonymous' };
  return unwrap(
    await client.request<EvaluateAnswer>('POST', '/security/evaluate', {
      useMasterKey: true,
      body: {
        viewpoint: viewpointOf,
        method: call.method,
        path,
        query: typedQuery(call.query),
        ...(call.body !== undefined ? { body: call.body } : {}),
      },
    }),
  );
}

async function send(s: AppScope, call: ApiCall): Promise<ApiCallAnswer> {
  const started = performance.now();
  if (call.as.kind === 'master' || (call.as.kind === 'anonymous' && call.method === 'GET')) {
    const master = call.as.kind === 'master';
    const res = await direct(s.client, call, master ? { useMasterKey: true } : { sessionToken: '' });
    const ms = round(performance.now() - started);
    const body = hideCredentials(res.body);
    const code = errorCodeOf(res.status, body);
    if (master && call.method !== 'GET') {
      s.audit(
        'api-console.call',
        `${call.method} ${call.path}`,
        { query: call.query, body: hideCredentials(call.body ?? null) },
        { status: res.status, ...(code !== undefined ? { code } : {}) },
      );
    }
    return {
      status: res.status,
      ...(code !== undefined ? { code } : {}),
      body,
      ms,
      dryRun: false,
      via: master ? 'master-key' : 'application-keys',
    };
  }
  const res = await evaluate(s.client, call);
  const ms = round(performance.now() - started);
  const body = hideCredentials(res.body);
  const code = errorCodeOf(res.status, body);
  return {
    status: res.status,
    ...(code !== undefined ? { code } : {}),
    body,
    ms,
    dryRun: res.dryRun === true,
    ...(res.wouldHave !== undefined ? { wouldHave: hideCredentials(res.wouldHave) } : {}),
    via: 'security-evaluate',
  };
}

/** Shell variables standing for the credentials in a copied curl command: the browser never holds their values. */
const PLACEHOLDERS = {
  applicationId: '$APPLICATION_ID',
  masterKey: '$MASTER_KEY',
  restAPIKey: '$REST_API_KEY',
  sessionToken: '$SESSION_TOKEN',
} as const;

/** Single quotes for a POSIX shell: nothing inside is expanded. */
const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The call as a `curl` command for a terminal, with the credentials as shell variables. Built here,
 * not in the browser: the console's bundle does not even know the service's key header names.
 */
export function curlOf(serverURL: string, call: ApiCall): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(call.query)) {
    search.set(name, typeof value === 'string' ? value : JSON.stringify(value));
  }
  const qs = search.toString();
  const lines = [
    `curl -X ${call.method} ${shellQuote(`${serverURL.replace(/\/+$/, '')}${call.path}${qs ? `?${qs}` : ''}`)}`,
  ];
  // Double quotes: the shell expands the placeholder variables.
  const header = (name: string, value: string) => lines.push(`-H "${name}: ${value}"`);
  header(HEADERS.applicationId, PLACEHOLDERS.applicationId);
  if (call.as.kind === 'master') header(HEADERS.masterKey, PLACEHOLDERS.masterKey);
  else header(HEADERS.restAPIKey, PLACEHOLDERS.restAPIKey);
  if (call.as.kind === 'user') header(HEADERS.sessionToken, PLACEHOLDERS.sessionToken);
  if (call.body !== undefined) {
    header('Content-Type', 'application/json');
    lines.push(`--data-raw ${shellQuote(JSON.stringify(call.body))}`);
  }
  return lines.join(' \\\n  ');
}

export function registerApiConsoleRoutes(router: express.Router, ctx: BffContext): void {
  // Sends nothing: the command a terminal would run (read-only users too: it changes nothing).
  router.post(
    '/apps/:appId/api-console/curl',
    appRoute(ctx, {}, async (s) => {
      const call = parse(apiCallBody, bodyOf(s.req), 'API call');
      const app = ctx.apps.list().find((a) => a.id === s.appId);
      return { curl: curlOf(app?.serverURL ?? '<service URL>', call) };
    }),
  );
  router.post(
    '/apps/:appId/api-console',
    appRoute(ctx, {}, async (s) => {
      const raw = bodyOf(s.req) as { method?: unknown; path?: unknown } | null;
      const refusal = apiConsoleRefusal(s.user.role, raw?.method, raw?.path);
      if (refusal) throw new BffError(403, ErrorCode.OPERATION_FORBIDDEN, refusal);
      const call = parse(apiCallBody, raw, 'API call');
      return send(s, call);
    }),
  );
}
