import type { IncomingHttpHeaders } from 'node:http';
import { scrubHeaders } from '@bds/client/protocol';
import type { Caller } from './caller.ts';
import type { WriteSource } from './events.ts';

/**
 * One call into the data layer: who makes it (resolved once, by auth/), where it entered, and a
 * per-request object that the before and after triggers of one request share.
 */
export interface Ctx {
  readonly caller: Caller;
  readonly source: WriteSource;
  readonly context: Record<string, unknown>;
  /** The client's address (kernel/client-address.ts: the socket's, or by the option trustProxy the right-most untrusted one of X-Forwarded-For); cloud code sees it as `request.ip`. */
  readonly ip?: string | null;
  /** The request's headers as cloud code sees them (`request.headers`): see `headersOf`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The request's trace id (kernel/trace.ts, `X-Request-Id`), when it came in over HTTP. */
  readonly requestId?: string;
  /**
   * The console user a master-key call was made for (`X-BDS-Console-User`, taken from master-key
   * callers only): the row history records its writes as the console's.
   */
  readonly consoleUser?: string;
}

export function ctxOf(
  caller: Caller,
  source: WriteSource = 'rest',
  ip?: string,
  headers?: Readonly<Record<string, string>>,
  requestId?: string,
): Ctx {
  const ctx: { -readonly [K in keyof Ctx]: Ctx[K] } = { caller, source, context: {} };
  if (ip !== undefined) ctx.ip = ip;
  if (headers !== undefined) ctx.headers = headers;
  if (requestId !== undefined) ctx.requestId = requestId;
  return ctx;
}

/**
 * A request's headers as cloud code is given them: lower-case names (as the incumbent gives them,
 * Node's own), a repeated header's values joined by `, `, and the values of the secret headers (the
 * master key, session token and other key headers, Authorization, Cookie: the log scrub's list,
 * docs/protocol.md#log-scrubbing) replaced by `[FILTERED]`, so a secret never reaches cloud code or
 * what it logs. A handler knows its caller from `request.user` and `request.master`.
 */
export function headersOf(raw: IncomingHttpHeaders): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return scrubHeaders(out);
}
