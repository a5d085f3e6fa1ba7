import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RequestOptions, startService, type TestService } from './service.ts';

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
  /** Substrings that must not appear in the raw response text. */
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
  options: { serviceOptions?: Record<string, unknown>; setup?: (ctx: ScenarioContext) => Promise<void> } = {},
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
        for (const bad of s.notContains ?? []) expect(res.text).not.toContain(bad);
        if (res.status >= 500) expect(res.text).not.toMatch(/at .+\.ts:\d+/);
        if (s.after) await s.after(ctx, res);
      });
    }
  });
}
