import { useCallback, useMemo } from 'react';
import { useSearchParams } from 'react-router';
import type { AuditQuery } from '../api/audit.ts';

/** The filters as kept in the URL: `since`/`until` are local calendar days (YYYY-MM-DD). */
export interface AuditFilters {
  user: string;
  action: string;
  target: string;
  since: string;
  until: string;
}

export const FILTER_NAMES = ['user', 'action', 'target', 'since', 'until'] as const;

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A local calendar day's first (or last) millisecond as ISO, or undefined when not a day. */
export function dayBound(day: string, end: boolean): string | undefined {
  const m = DAY.exec(day);
  if (!m) return undefined;
  const d = end
    ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), 23, 59, 59, 999)
    : new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** The filters to the bff's query (empty ones left out). */
export function toQuery(app: string, f: AuditFilters): AuditQuery {
  const q: AuditQuery = { app };
  if (f.user.trim()) q.user = f.user.trim();
  if (f.action.trim()) q.action = f.action.trim();
  if (f.target.trim()) q.target = f.target.trim();
  const since = dayBound(f.since, false);
  const until = dayBound(f.until, true);
  if (since) q.since = since;
  if (until) q.until = until;
  return q;
}

/** Audit filters read from and written to the URL's search params. */
export function useAuditFilters() {
  const [search, setSearch] = useSearchParams();
  const filters = useMemo<AuditFilters>(
    () => ({
      user: search.get('user') ?? '',
      action: search.get('action') ?? '',
      target: search.get('target') ?? '',
      since: search.get('since') ?? '',
      until: search.get('until') ?? '',
    }),
    [search],
  );
  const setFilters = useCallback(
    (next: AuditFilters) => {
      const params = new URLSearchParams();
      for (const name of FILTER_NAMES) {
        const v = next[name].trim();
        if (v) params.set(name, v);
      }
      setSearch(params);
    },
    [setSearch],
  );
  return { filters, setFilters };
}
