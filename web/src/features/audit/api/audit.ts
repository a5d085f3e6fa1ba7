import type { AuditEntry } from '@bds/client/protocol';
import { useInfiniteQuery } from '@tanstack/react-query';
import { api } from '../../../lib/api.ts';

export type { AuditEntry } from '@bds/client/protocol';

export interface AuditPage {
  results: AuditEntry[];
  /** Pass as `before` for the next (older) page; null on the last page. */
  next: number | null;
}

/** GET /bff/audit's filters (`since`/`until` as ISO date-times). */
export interface AuditQuery {
  app: string;
  user?: string;
  action?: string;
  target?: string;
  since?: string;
  until?: string;
}

export const AUDIT_PAGE_SIZE = 50;

export const auditKey = (q: AuditQuery) => ['apps', q.app, 'audit', q] as const;

/** The app's audit log, newest first, keyset-paged by entry id ("Load more" asks for older ones). */
export function useAuditLog(q: AuditQuery) {
  return useInfiniteQuery({
    queryKey: auditKey(q),
    queryFn: ({ pageParam, signal }) =>
      api.get<AuditPage>(
        '/audit',
        { ...q, limit: AUDIT_PAGE_SIZE, ...(pageParam === null ? {} : { before: pageParam }) },
        signal,
      ),
    initialPageParam: null as number | null,
    getNextPageParam: (last) => last.next,
    staleTime: 0,
  });
}
