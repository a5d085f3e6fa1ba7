import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, type RequestOptions, startService, type TestService } from './service.ts';

/**
 * Text that must never appear in any answer, checked on every row that returns a body: stack
 * frames and error class names of Node or the store (an internal error leaking out), the master key,
 * and the internal _User columns and password hash format.
 */
export const NEVER_IN_ANSWERS: readonly string[] = [
  '    at ',
  '\\n    at ',
  'node:internal',
  'Error:',
  'TypeError',
  'ReferenceError',
  'RangeError',
  'SyntaxError',
  'SqliteError',
  'SQLITE_',
  KEYS.masterKey,
  '_hashed_password',
  '_perishable_token',
  '_email_verify_token',
  '_auth_anonymous_id',
  'scrypt$',
];

/**
 * One row per behaviour (the PocketBase style): a request, the status and protocol code it must
 * answer, fragments the body must contain, and text that must NOT appear anywhere in the answer.
 */
export interface Scenario extends RequestOptions {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS';
  /** Below the mount path; `{name}` is replaced by values the setup stored in `ctx.vars`. */
  path: string;
  status: number;
  /** Protocol error code expected in the body. */
  code?: number;
  /** Partial match against the JSON body (toMatchObject). */
  expect?: unknown;
  /** Substrings the error text must contain. */
  errorContains?: string;
  /**
   * Substrings that must not appear in the raw response text, besides NEVER_IN_ANSWERS and the
   * table's own list; `{name}` is replaced as in `path` (e.g. another user's session token).
   */
  notContains?: string[];
  /** Runs before the request (after the shared setup). */
  before?: (ctx: ScenarioContext) => Promise<void>;
  /** Extra checks on the response, and on the store afterwards. */
  after?: (ctx: ScenarioContext, res: Awaited<ReturnType<TestService['request']>>) => Promise<void>;
}

export interface ScenarioContext {
  t: TestService;
  vars: Record<string, string>;
}

function fill(text: string, vars: Record<string, string>): string {
  return text.replace(/\{(\w+)\}/g, (_, k: string) => {
    if (!(k in vars)) throw new Error(`scenario uses {${k}} but the setup did not define it`);
    return vars[k]!;
  });
}

/** Runs a table of scenarios against one service started for the table. */
export function runScenarios(
  title: string,
  scenarios: Scenario[],
  options: {
    serviceOptions?: Record<string, unknown>;
    setup?: (ctx: ScenarioContext) => Promise<void>;
    /** Added to every row's `notContains` (e.g. `{otherToken}`: a session token no row may show). */
    notContains?: string[];
  } = {},
): void {
  describe(title, () => {
    const ctx = { vars: {} } as ScenarioContext;
    beforeAll(async () => {
      ctx.t = await startService(options.serviceOptions);
      if (options.setup) await options.setup(ctx);
    });
    afterAll(async () => {
      await ctx.t?.close();
    });
    for (const s of scenarios) {
      it(s.name, async () => {
        if (s.before) await s.before(ctx);
        const query = s.query
          ? Object.fromEntries(
              Object.entries(s.query).map(([k, v]) => [k, typeof v === 'string' ? fill(v, ctx.vars) : v]),
            )
          : undefined;
        const body = s.body === undefined ? undefined : JSON.parse(fill(JSON.stringify(s.body), ctx.vars));
        const sessionToken = s.sessionToken === undefined ? undefined : fill(s.sessionToken, ctx.vars);
        const res = await ctx.t.request(s.method, fill(s.path, ctx.vars), {
          ...s,
          query,
          body,
          sessionToken,
        });
        expect(res.status, res.text).toBe(s.status);
        if (s.code !== undefined) expect(res.json?.code, res.text).toBe(s.code);
        if (s.expect !== undefined) expect(res.json).toMatchObject(s.expect as object);
        if (s.errorContains !== undefined) expect(res.json?.error ?? '').toContain(s.errorContains);
        if (res.text)
          for (const bad of NEVER_IN_ANSWERS) expect(res.text, 'never in an answer').not.toContain(bad);
        for (const bad of [...(options.notContains ?? []), ...(s.notContains ?? [])]) {
          expect(res.text).not.toContain(fill(bad, ctx.vars));
        }
        if (res.status >= 500) expect(res.text).not.toMatch(/at .+\.ts:\d+/);
        if (s.after) await s.after(ctx, res);
      });
    }
  });
}
