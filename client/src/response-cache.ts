/**
 * The opt-in response cache of a client (option `cache`): answers of GET `/classes/...`, kept per
 * cache tenant and per caller (master, a hash of the session token, or anonymous) for `ttlMs`. A
 * write to a class forgets the answers of that class.
 */
import { currentSlot } from './ambient.ts';
import type { ResolvedAuth, Result } from './options.ts';

interface CacheEntry {
  className: string;
  expires: number;
  result: Result;
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The class whose cached answers a request path touches ('' when none). */
export function classOfPath(path: string): string {
  const p = path.replace(/^\/[^/]+(?=\/(classes|users|roles)\b)/, '');
  const m = /^\/classes\/([^/?]+)/.exec(p);
  if (m) return decodeURIComponent(m[1]!);
  if (p.startsWith('/users')) return '_User';
  if (p.startsWith('/roles')) return '_Role';
  return '';
}

export class ResponseCache {
  private readonly entries = new Map<string, CacheEntry>();

  constructor(private readonly ttlMs: number) {}

  /** The key of a url read by this caller in the current cache tenant. */
  async keyFor(auth: ResolvedAuth, url: string): Promise<string> {
    const who =
      auth.kind === 'master' ? 'master' : auth.kind === 'session' ? await sha256Hex(auth.token) : 'anon';
    return `${currentSlot().cacheTenant ?? '-'}:${who}:${url}`;
  }

  /** A copy of the answer kept under `key`, while it is fresh. */
  fresh(key: string): Result | undefined {
    const hit = this.entries.get(key);
    if (hit && hit.expires > Date.now()) return structuredClone(hit.result);
    return undefined;
  }

  keep(key: string, className: string, result: Result): void {
    this.entries.set(key, { className, expires: Date.now() + this.ttlMs, result });
  }

  /** Forgets every answer of the class. */
  forgetClass(className: string): void {
    for (const [k, e] of this.entries) if (e.className === className) this.entries.delete(k);
  }

  clear(): void {
    this.entries.clear();
  }
}
