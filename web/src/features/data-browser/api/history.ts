/**
 * The row history's calls to the bff (`/bff/apps/:appId/history/...`, the service's history
 * routes proxied): a row's versions and a class's recent changes, each paged, revert and restore.
 */
import { useInfiniteQuery } from '@tanstack/react-query';
import { apiFetch, seg } from '../../../lib/api.ts';
import { dataBrowserKeys } from './query-keys.ts';

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

/** Versions per page, a row's and a class's; the next page starts before the last one listed. */
export const HISTORY_PAGE = 50;

export interface VersionPage {
  results: Version[];
}

export const historyApi = {
  versions: (appId: string, cls: string, id: string, before: string | null, signal?: AbortSignal) =>
    apiFetch<VersionPage>(row(appId, cls, id), {
      query: { limit: HISTORY_PAGE, before },
      signal,
    }),
  changes: (appId: string, cls: string, q: ChangesQuery, before: string | null, signal?: AbortSignal) =>
    apiFetch<VersionPage>(base(appId, cls), { query: { ...q, limit: HISTORY_PAGE, before }, signal }),
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

/** The next page's `before`: the last version of a full page, else none. */
const nextBefore = (last: VersionPage): string | null =>
  last.results.length === HISTORY_PAGE ? (last.results.at(-1)?.id ?? null) : null;

/** A row's versions, newest first, a page at a time ("Load older versions"). */
export function useRowVersions(appId: string, cls: string, id: string) {
  return useInfiniteQuery({
    queryKey: dataBrowserKeys.rowHistory(appId, cls, id),
    queryFn: ({ pageParam, signal }) => historyApi.versions(appId, cls, id, pageParam, signal),
    initialPageParam: null as string | null,
    getNextPageParam: nextBefore,
  });
}

/** A class's recent changes under filters, newest first, a page at a time ("Load more changes"). */
export function useClassChanges(appId: string, cls: string, q: ChangesQuery) {
  return useInfiniteQuery({
    queryKey: dataBrowserKeys.changes(appId, cls, { ...q }),
    queryFn: ({ pageParam, signal }) => historyApi.changes(appId, cls, q, pageParam, signal),
    initialPageParam: null as string | null,
    getNextPageParam: nextBefore,
    staleTime: 0,
  });
}
