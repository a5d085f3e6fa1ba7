import { AuthenticationError, ServerError } from '@bds/client';
import { ErrorCode } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, BffError, bodyOf, parse } from './http.ts';

/**
 * A path the API console may call: relative to the service's mount path, no scheme, host,
 * `..` segment (plain or percent-encoded), backslash, query or fragment.
 */
export function checkConsolePath(path: string): string | null {
  if (!path.startsWith('/')) return 'The path must start with "/" (it is relative to the API).';
  if (path.startsWith('//')) return 'The path may not name another host.';
  if (/[\s\\?#]/.test(path) || [...path].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    return 'The path may not contain spaces, backslashes, "?" or "#" (pass query parameters in "query").';
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(path.slice(1)) || path.includes('://')) return 'Absolute URLs are refused.';
  let decoded = path;
  try {
    for (let i = 0; i < 3 && /%[0-9a-f]{2}/i.test(decoded); i++) decoded = decodeURIComponent(decoded);
  } catch {
    return 'The path is not valid percent-encoding.';
  }
  if (decoded.split(/[/\\]/).some((seg) => seg === '..' || seg === '.')) {
    return 'The path may not contain "." or ".." segments.';
  }
  if (decoded !== path && (decoded.includes('//') || /[\\?#]/.test(decoded))) {
    return 'The path may not hide "//", "\\\\", "?" or "#" in percent-encoding.';
  }
  return null;
}

const consoleBody = z.strictObject({
  method: z.enum(['GET', 'POST', 'PUT', 'DELETE']),
  path: z.string().min(1).max(2000),
  query: z.record(z.string(), z.unknown()).optional(),
  body: z.unknown().optional(),
});

/** The raw "API console": forwards one REST call with the master key and shows {status, body}. */
export function registerConsoleRoutes(router: express.Router, ctx: BffContext): void {
  router.post(
    '/apps/:appId/console',
    appRoute(ctx, { write: true }, async (s) => {
      const call = parse(consoleBody, bodyOf(s.req), 'API console call');
      const problem = checkConsolePath(call.path);
      if (problem) throw new BffError(400, ErrorCode.INVALID_JSON, problem);
      if (call.method === 'GET' && call.body !== undefined) {
        throw new BffError(400, ErrorCode.INVALID_JSON, 'A GET call takes no body (use "query").');
      }
      let answer: { status: number; body: unknown };
      try {
        const res = await s.client.request(call.method, call.path, {
          useMasterKey: true,
          query: call.query,
          body: call.body,
        });
        answer = res.success
          ? { status: res.status, body: res.data ?? null }
          : { status: res.status, body: { code: res.code, error: res.error } };
      } catch (err) {
        // The service answered, with a status the client library turns into an exception: show it.
        if (!(err instanceof AuthenticationError || err instanceof ServerError) || err.status === undefined)
          throw err;
        answer = { status: err.status, body: { code: err.code ?? null, error: err.message } };
      }
      if (call.method !== 'GET') {
        s.audit(
          'console.request',
          `${call.method} ${call.path}`,
          { query: call.query ?? null, body: call.body ?? null },
          answer,
        );
      }
      return answer;
    }),
  );
}
