import { normalPath, pathSegments } from '@bds/client/protocol';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A request as the route handlers see it: credentials resolved, body parsed. Batch builds these too. */
export interface ApiRequest {
  method: Method;
  /** Path below the mount path in its normal form (`normalPath`), e.g. `/classes/Post/abc`. */
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
  precedence: number;
}

/**
 * Which route answers a path that routes of one method and one pattern share: the higher. The
 * account rules' routes (`/users`, `/sessions` and their `/classes/_User`, `/classes/_Session`
 * forms) take those paths from the record routes, which serve every class.
 */
export const ROUTE_PRECEDENCE = { records: 0, accountRules: 1 } as const;

/**
 * A small path router shared by the HTTP entry point and batch, so that a sub-request takes
 * exactly the same path (and checks) as a direct call. The order routes are added in decides
 * nothing: of the routes that match a path, a literal segment wins over a parameter (compared
 * from the first segment on: `/users/me` over `/users/:objectId`, `/classes/_User` over
 * `/classes/:className`), then the higher precedence (`ROUTE_PRECEDENCE`). Only routes of one
 * method, one pattern and one precedence are taken in the order they were added (the first).
 */
export class Router {
  /**
   * Runs before every handler (direct requests and batch members alike): the rate limits. It may
   * answer a promise (a limited route waits for the shared counter); otherwise nothing is awaited.
   */
  constructor(private readonly before?: (req: Omit<ApiRequest, 'params'>) => Promise<void> | undefined) {}

  /** Routes by segment count and first segment (routes whose first segment is a parameter: key `n:`). */
  private readonly index = new Map<string, Route[]>();
  /**
   * Candidates per lookup key, literal-first routes followed by parameter-first ones, each list in
   * the order of `ranksBefore`; built on add.
   */
  private readonly candidates = new Map<string, Route[]>();

  add(
    method: Method,
    pattern: string,
    handler: Handler,
    precedence: number = ROUTE_PRECEDENCE.records,
  ): this {
    const segments = pattern.split('/').filter(Boolean);
    const first = segments[0] ?? '';
    const key = `${segments.length}:${first.startsWith(':') ? '' : first}`;
    const list = this.index.get(key) ?? [];
    const route: Route = { method, segments, handler, precedence };
    // Kept in matching order: before the first route it ranks before, else last.
    const at = list.findIndex((other) => ranksBefore(route, other));
    list.splice(at < 0 ? list.length : at, 0, route);
    this.index.set(key, list);
    this.candidates.clear();
    return this;
  }

  /** Every route, as `{method, pattern, precedence}` (for the route crawls of the security tests). */
  routes(): Array<{ method: Method; pattern: string; precedence: number }> {
    const out: Array<{ method: Method; pattern: string; precedence: number }> = [];
    for (const list of this.index.values()) {
      for (const { method, segments, precedence } of list) {
        out.push({ method, pattern: `/${segments.join('/')}`, precedence });
      }
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

  /** Whether some route, of any method, has this path (a path no route has is not the router's). */
  has(path: string): boolean {
    const parts = segmentsOf(path);
    return this.candidatesFor(parts.length, parts[0] ?? '').some((route) =>
      literalsMatch(route.segments, parts),
    );
  }

  /**
   * The route for a path, matched on its decoded segments (`pathSegments`: empty ones dropped, each
   * decoded once), with its parameters.
   */
  match(method: string, path: string): { handler: Handler; params: Record<string, string> } | undefined {
    const parts = segmentsOf(path);
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
        params[seg.slice(1)] = parts[i]!;
      }
      return { handler: route.handler, params };
    }
    if (pathMatched)
      throw new BdsError(ErrorCode.INVALID_JSON, `Method ${method} is not allowed on ${path}.`, 405);
    return undefined;
  }

  /**
   * Runs a request (a direct one, or a batch member as written in the batch): its path is put in
   * its normal form first, so the `before` hook (the rate limits) and the handler see the spelling
   * of the route it is dispatched to.
   */
  async dispatch(req: Omit<ApiRequest, 'params'>): Promise<ApiResponse> {
    const path = requestPath(req.path);
    const found = this.match(req.method, path);
    if (!found) throw new BdsError(ErrorCode.INVALID_JSON, `Unknown route: ${req.method} ${path}`, 404);
    const request = req as ApiRequest;
    request.path = path;
    const waiting = this.before?.(request);
    if (waiting) await waiting;
    request.params = found.params;
    return found.handler(request);
  }
}

/**
 * The normal form of a request path (`normalPath`), the one spelling every rule about paths
 * decides on; a malformed %-escape answers 400 with code 107, naming the segment.
 */
export function requestPath(path: string): string {
  const normal = normalPath(path);
  if (normal === undefined) throw malformed(path);
  return normal;
}

/**
 * The path below the mount path (both in normal form), or undefined when `path` is not under it.
 * `mount` is the normal mount path (`requestPath`); `/` mounts at the root.
 */
export function belowMount(path: string, mount: string): string | undefined {
  if (mount === '/') return path;
  if (path === mount) return '/';
  return path.startsWith(mount) && path.charCodeAt(mount.length) === 47 /* / */
    ? path.slice(mount.length)
    : undefined;
}

function segmentsOf(path: string): string[] {
  const parts = pathSegments(path);
  if (parts === undefined) throw malformed(path);
  return parts;
}

function malformed(path: string): BdsError {
  const segment = path.split('/').find((part) => !decodes(part)) ?? path;
  return new BdsError(ErrorCode.INVALID_JSON, `Malformed path segment: ${segment}`, 400);
}

function decodes(part: string): boolean {
  try {
    decodeURIComponent(part);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `a` answers before `b` where both match a path (they have as many segments): the first
 * segment where one is a literal and the other a parameter decides for the literal; when there is
 * none, the higher precedence.
 */
function ranksBefore(a: Route, b: Route): boolean {
  for (let i = 0; i < a.segments.length; i++) {
    const aParam = a.segments[i]!.charCodeAt(0) === 58; /* : */
    const bParam = b.segments[i]?.charCodeAt(0) === 58;
    if (aParam !== bParam) return bParam;
  }
  return a.precedence > b.precedence;
}

function literalsMatch(segments: string[], parts: string[]): boolean {
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.charCodeAt(0) !== 58 /* : */ && seg !== parts[i]) return false;
  }
  return true;
}
