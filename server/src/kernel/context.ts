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
}

export function ctxOf(caller: Caller, source: WriteSource = 'rest', ip?: string): Ctx {
  return ip === undefined ? { caller, source, context: {} } : { caller, source, context: {}, ip };
}
