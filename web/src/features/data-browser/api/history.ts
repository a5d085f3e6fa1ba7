/**
 * The row history's calls to the bff (`/bff/apps/:appId/history/...`, the service's history
 * routes proxied) and their query keys: a row's versions, a class's recent changes, revert and
 * restore.
 */
import { apiFetch, seg } from '../../../lib/api.ts';

export type VersionOp = 'create' | 'update' | 'delete' | 'revert' | 'restore';

export interface VersionCaller {
  kind: 'master' | 'user' | 'anonymous' | 'console' | 'cloud' | 'hook' | 'system';
  userId?: string;
  name?: string;
}

/** One write of a row, as the service recorded it. */
export interface Version {
  id: string;
  className: string;
  objectId: string;
  op: VersionOp;
  time: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  caller: VersionCaller;
  source: string;
  eventId: string | null;
  requestId: string | null;
  /** On a revert: the version reverted to. */
  revertOf?: string;
}

/** The recent changes' filters (`since`/`until` as ISO date-times). */
export interface ChangesQuery {
  user?: string;
  field?: string;
  since?: string;
  until?: string;
  op?: VersionOp;
}

const base = (appId: string, cls: string) => `/apps/${seg(appId)}/history/${encodeURIComponent(cls)}`;
const row = (appId: string, cls: string, id: string) => `${base(appId, cls)}/${encodeURIComponent(id)}`;

export const historyApi = {
  versions: (appId: string, cls: string, id: string, signal?: AbortSignal) =>
    apiFetch<{ results: Version[] }>(row(appId, cls, id), { query: { limit: 100 }, signal }),
  changes: (appId: string, cls: string, q: ChangesQuery, signal?: AbortSignal) =>
    apiFetch<{ results: Version[] }>(base(appId, cls), { query: { ...q, limit: 100 }, signal }),
  revert: (appId: string, cls: string, id: string, version: string) =>
    apiFetch<{ objectId: string; updatedAt: string }>(`${row(appId, cls, id)}/revert`, {
      method: 'POST',
      body: { version },
    }),
  restore: (appId: string, cls: string, id: string) =>
    apiFetch<{ objectId: string; createdAt: string }>(`${row(appId, cls, id)}/restore`, {
      method: 'POST',
      body: {},
    }),
};
