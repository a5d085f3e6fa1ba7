import { FILTERED, isSecretKey } from '@bds/client/protocol';
import type { ApiCall } from './call.ts';

/**
 * The API console's history, per app, in the browser's localStorage. An entry holds the call
 * only (method, path, query, body, who it ran as): never a key or a token; values under secret
 * field names (password, sessionToken, …) are stored as `[FILTERED]`.
 */

export interface HistoryEntry {
  id: string;
  /** ISO time of the call. */
  at: string;
  call: ApiCall;
}

export const HISTORY_LIMIT = 50;
export const historyKey = (appId: string) => `bds.api-console.history.${appId}`;

/** A copy with every value under a secret key replaced, at any depth. */
export function withoutSecrets<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => withoutSecrets(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k) ? FILTERED : withoutSecrets(v);
    return out as T;
  }
  return value;
}

function isEntry(e: unknown): e is HistoryEntry {
  const c = (e as HistoryEntry | null)?.call;
  return (
    typeof (e as HistoryEntry)?.id === 'string' && typeof c?.method === 'string' && typeof c.path === 'string'
  );
}

export function readHistory(storage: Storage, appId: string): HistoryEntry[] {
  try {
    const parsed: unknown = JSON.parse(storage.getItem(historyKey(appId)) ?? '[]');
    return Array.isArray(parsed) ? parsed.filter(isEntry) : [];
  } catch {
    return [];
  }
}

/** Adds a call at the top (newest first), keeping at most HISTORY_LIMIT entries. */
export function addToHistory(
  storage: Storage,
  appId: string,
  call: ApiCall,
  at = new Date(),
): HistoryEntry[] {
  const entry: HistoryEntry = {
    id: `${at.getTime().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    at: at.toISOString(),
    call: {
      method: call.method,
      path: call.path,
      query: withoutSecrets(call.query),
      ...(call.body !== undefined ? { body: withoutSecrets(call.body) } : {}),
      as:
        call.as.kind === 'user'
          ? { kind: 'user', userId: call.as.userId, username: call.as.username }
          : { kind: call.as.kind },
    },
  };
  const next = [entry, ...readHistory(storage, appId)].slice(0, HISTORY_LIMIT);
  storage.setItem(historyKey(appId), JSON.stringify(next));
  return next;
}

export function clearHistory(storage: Storage, appId: string): void {
  storage.removeItem(historyKey(appId));
}
