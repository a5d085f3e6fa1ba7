import { useParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
import { Button } from '../../components/ui/button.tsx';
import { useAuditLog } from './api/audit.ts';
import { AuditFilterBar } from './components/audit-filters.tsx';
import { AuditTable } from './components/audit-table.tsx';
import { toQuery, useAuditFilters } from './hooks/use-audit-filters.ts';

/** /apps/:appId/audit?user=&action=&target=&since=&until= — read-only for every console user. */
export default function AuditRoute() {
  const { appId = '' } = useParams();
  const { filters, setFilters } = useAuditFilters();
  const log = useAuditLog(toQuery(appId, filters));
  const entries = log.data?.pages.flatMap((p) => p.results) ?? [];

  return (
    <div className="mx-auto max-w-6xl p-6">
      <h1 className="text-xl font-semibold">Audit</h1>
      <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
        Every change made through the console to this app: who, what and when. The log is append-only.
      </p>
      {/* Remount on URL change (back/forward, Clear) so the inputs show the applied filters. */}
      <AuditFilterBar key={JSON.stringify(filters)} filters={filters} onApply={setFilters} />
      <QueryState
        query={log}
        loading="Loading the audit log…"
        failed="Could not load the audit log"
        isEmpty={() => entries.length === 0}
        empty={
          <p className="text-sm text-slate-500" data-testid="audit-empty">
            No audit entries match.
          </p>
        }
      >
        {() => (
          <>
            <AuditTable entries={entries} />
            <div className="mt-3 flex items-center gap-3 text-sm text-slate-500 dark:text-slate-400">
              <span data-testid="audit-count">
                {entries.length} {entries.length === 1 ? 'entry' : 'entries'}
              </span>
              {log.hasNextPage && (
                <Button onClick={() => void log.fetchNextPage()} disabled={log.isFetchingNextPage}>
                  {log.isFetchingNextPage ? 'Loading…' : 'Load more'}
                </Button>
              )}
            </div>
          </>
        )}
      </QueryState>
    </div>
  );
}
