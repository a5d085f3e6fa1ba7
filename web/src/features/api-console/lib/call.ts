/** One call of the API console, as composed on screen and as kept in the history. */

export const METHODS = ['GET', 'POST', 'PUT', 'DELETE'] as const;
export type Method = (typeof METHODS)[number];

/** Who the call runs as. A user carries its username for display only (never a token). */
export type RunAs =
  | { kind: 'master' }
  | { kind: 'user'; userId: string; username: string }
  | { kind: 'anonymous' };

export interface ApiCall {
  method: Method;
  /** Under the service's mount, e.g. `/classes/Post`. */
  path: string;
  query: Record<string, unknown>;
  /** JSON body (absent for GET). */
  body?: unknown;
  as: RunAs;
}

/** What the bff answers for a call (bff/src/routes/api-console.ts `ApiCallAnswer`). */
export interface ApiCallAnswer {
  status: number;
  code?: number;
  body: unknown;
  ms: number;
  dryRun: boolean;
  wouldHave?: unknown;
  via: 'master-key' | 'security-evaluate' | 'application-keys';
}

/** The viewpoint as the bff takes it (the username stays in the browser). */
export function wireAs(as: RunAs) {
  return as.kind === 'user' ? { kind: 'user' as const, userId: as.userId } : { kind: as.kind };
}

export function asLabel(as: RunAs): string {
  if (as.kind === 'master') return 'master key';
  if (as.kind === 'anonymous') return 'anonymous';
  return `user ${as.username}`;
}

/** A JSON object typed in a text box (empty means `{}`), or why it is not one. */
export function parseObject(
  text: string,
  what: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (!text.trim()) return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `${what} is not valid JSON: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, error: `${what} must be a JSON object, e.g. {"limit": 10}.` };
  return { ok: true, value: value as Record<string, unknown> };
}

/** A body typed in a text box: a JSON object or array; empty means no body. */
export function parseBody(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  if (!text.trim()) return { ok: true, value: undefined };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `Body is not valid JSON: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object')
    return { ok: false, error: 'Body must be a JSON object or array.' };
  return { ok: true, value };
}
