import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { useParams, useSearchParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
import { Button } from '../../components/ui/button.tsx';
import { logsKey, openTail, useLogs } from './api/logs.ts';
import { FiltersForm } from './components/filters-form.tsx';
import { RequestLines } from './components/request-lines.tsx';
import { RequestsTable } from './components/requests-table.tsx';
import { filtersOf, type LogFilters } from './lib/filters.ts';

/** Longest the list waits to show what the live tail brought. */
const TAIL_REFRESH_MS = 500;

/**
 * /apps/:appId/logs: the service's request lines (its last ones, of every instance with Redis) by
 * filters kept in the URL (`?requestId=<id>` opens that request's lines: the row history links
 * here); a click on a request shows its lines (cloud code, webhooks, realtime deliveries). The live
 * tail refreshes the list as new requests are served.
 */
export default function LogsRoute() {
  const { appId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const filters = useMemo(() => filtersOf(params), [params]);
  const logs = useLogs(appId, filters);
  const [selected, setSelected] = useState<string | undefined>(filters.requestId);
  const [tail, setTail] = useState<'off' | 'connecting' | 'on'>('off');
  const [tailError, setTailError] = useState<string>();
  const [arrived, setArrived] = useState(0);
  const queryClient = useQueryClient();
  const refresh = useRef<ReturnType<typeof setTimeout>>(undefined);

  useEffect(() => {
    if (filters.requestId) setSelected(filters.requestId);
  }, [filters.requestId]);

  const tailOn = tail !== 'off';
  useEffect(() => {
    if (!tailOn) return;
    setArrived(0);
    setTailError(undefined);
    const close = openTail(appId, {
      onReady: () => setTail('on'),
      onLine: () => {
        setArrived((n) => n + 1);
        refresh.current ??= setTimeout(() => {
          refresh.current = undefined;
          void queryClient.invalidateQueries({ queryKey: logsKey(appId) });
        }, TAIL_REFRESH_MS);
      },
      onFail: (error) => {
        setTailError(error);
        setTail('off');
      },
    });
    return () => {
      close();
      if (refresh.current) clearTimeout(refresh.current);
      refresh.current = undefined;
    };
  }, [tailOn, appId, queryClient]);

  const apply = (next: LogFilters) => setParams(new URLSearchParams(next as Record<string, string>));

  return (
    <div className="mx-auto max-w-7xl p-6">
      <div className="flex items-start justify-between gap-4">
        <div>
          <h1 className="text-xl font-semibold">Logs</h1>
          <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
            The service's last request lines (option <code>requestLogSize</code>), newest first. Click a
            request to see its lines: what its cloud code logged, the webhooks it called, the realtime
            deliveries it caused.
          </p>
        </div>
        <div className="flex shrink-0 items-center gap-2">
          <span className="text-xs text-slate-500" data-testid="tail-status" aria-live="polite">
            {tail === 'on'
              ? `Live: ${arrived} new ${arrived === 1 ? 'request' : 'requests'}`
              : tail === 'connecting'
                ? 'Connecting…'
                : ''}
          </span>
          <Button
            aria-pressed={tailOn}
            variant={tailOn ? 'primary' : 'secondary'}
            onClick={() => setTail(tailOn ? 'off' : 'connecting')}
          >
            {tailOn ? 'Stop live tail' : 'Live tail'}
          </Button>
          <Button onClick={() => void logs.refetch()} disabled={logs.isFetching}>
            Refresh
          </Button>
        </div>
      </div>
      {tailError && (
        <p role="alert" className="mb-3 text-sm text-red-700 dark:text-red-300">
          {tailError}
        </p>
      )}
      <FiltersForm key={params.toString()} filters={filters} onApply={apply} />
      <QueryState
        query={logs}
        loading="Loading the request lines…"
        failed="Could not load the request lines"
        errorTestId="logs-error"
        isEmpty={(a) => a.results.length === 0}
        empty={
          <p className="text-sm text-slate-500" data-testid="logs-empty">
            No request line matches.
          </p>
        }
      >
        {(a) => <RequestsTable lines={a.results} selected={selected} onSelect={setSelected} />}
      </QueryState>
      {selected && <RequestLines appId={appId} requestId={selected} onClose={() => setSelected(undefined)} />}
    </div>
  );
}
