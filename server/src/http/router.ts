import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A request as the route handlers see it: credentials resolved, body parsed. Batch builds these too. */
export interface ApiRequest {
  method: Method;
  /** Path below the mount path, e.g. `/classes/Post/abc`. */
  path: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  /** The caller (resolved once, before routing) and where the request entered. */
  ctx: Ctx;
  /** True for a sub-request of a batch. */
  inBatch: boolean;
}

export interface ApiResponse {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: ApiRequest) => Promise<ApiResponse>;

interface Route {
  method: Method;
  segments: string[];
  handler: Handler;
}

/**
 * A small path router shared by the HTTP entry point and batch, so that a sub-request takes
 * exactly the same path (and checks) as a direct call.
 */
export class Router {
  /**
   * Runs before every handler (direct requests and batch members alike): the rate limits. It may
   * answer a promise (a limited route waits for the shared counter); otherwise nothing is awaited.
   */
  constructor(private readonly before?: (req: Omit<ApiRequest, 'params'>) => Promise<void> | undefined) {}

  /** Routes by segment count and first segment (routes whose first segment is a parameter: key `n:`). */
  private readonly index = new Map<string, Route[]>();
  /** Candidates per lookup key, literal-first routes followed by parameter-first ones; built on add. */
  private readonly candidates = new Map<string, Route[]>();

  add(method: Method, pattern: string, handler: Handler): this {
    const segments = pattern.split('/').filter(Boolean);
    const first = segments[0] ?? '';
    const key = `${segments.length}:${first.startsWith(':') ? '' : first}`;
    const list = this.index.get(key) ?? [];
    list.push({ method, segments, handler });
    this.index.set(key, list);
    this.candidates.clear();
    return this;
  }

  /** Every route, as `{method, pattern}` (for the route crawls of the security tests). */
  routes(): Array<{ method: Method; pattern: string }> {
    const out: Array<{ method: Method; pattern: string }> = [];
    for (const list of this.index.values()) {
      for (const route of list) out.push({ method: route.method, pattern: `/${route.segments.join('/')}` });
    }
    return out;
  }

  private candidatesFor(count: number, first: string): Route[] {
    const key = `${count}:${first}`;
    let list = this.candidates.get(key);
    if (!list) {
      list = [...(this.index.get(key) ?? []), ...(first ? (this.index.get(`${count}:`) ?? []) : [])];
      // Unknown first segments all share one entry, so probing paths cannot grow the map.
      if (this.index.has(key) || !first) this.candidates.set(key, list);
    }
    return list;
  }

  match(method: string, path: string): { handler: Handler; params: Record<string, string> } | undefined {
    const parts = path.split('/').filter(Boolean);
    const candidates = this.candidatesFor(parts.length, parts[0] ?? '');
    let pathMatched = false;
    for (const route of candidates) {
      if (!literalsMatch(route.segments, parts)) continue;
      pathMatched = true;
      if (route.method !== method) continue;
      const params: Record<string, string> = {};
      for (let i = 0; i < parts.length; i++) {
        const seg = route.segments[i]!;
        if (seg.charCodeAt(0) !== 58 /* : */) continue;
        params[seg.slice(1)] = decodedSegment(parts[i]!);
      }
      return { handler: route.handler, params };
    }
    if (pathMatched)
      throw new BdsError(ErrorCode.INVALID_JSON, `Method ${method} is not allowed on ${path}.`, 405);
    return undefined;
  }

  async dispatch(req: Omit<ApiRequest, 'params'>): Promise<ApiResponse> {
    const found = this.match(req.method, req.path);
    if (!found) throw new BdsError(ErrorCode.INVALID_JSON, `Unknown route: ${req.method} ${req.path}`, 404);
    const waiting = this.before?.(req);
    if (waiting) await waiting;
    const request = req as ApiRequest;
    request.params = found.params;
    return found.handler(request);
  }
}

/** A path segment with its %-escapes decoded (most segments have none). */
function decodedSegment(part: string): string {
  if (!part.includes('%')) return part;
  try {
    return decodeURIComponent(part);
  } catch {
    throw new BdsError(ErrorCode.INVALID_JSON, `Malformed path segment: ${part}`, 400);
  }
}

function literalsMatch(segments: string[], parts: string[]): boolean {
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.charCodeAt(0) !== 58 /* : */ && seg !== parts[i]) return false;
  }
  return true;
}
