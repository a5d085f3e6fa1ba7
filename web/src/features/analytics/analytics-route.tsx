import { useState } from 'react';
import { useParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
import { Input, Select } from '../../components/ui/input.tsx';
import { type AnalyticsFilters, useEventCounts } from './api/analytics.ts';
import { EventsChart } from './components/events-chart.tsx';

/** /apps/:appId/analytics: stored events per name over time, with filters. */
export default function AnalyticsRoute() {
  const { appId = '' } = useParams();
  const [filters, setFilters] = useState<AnalyticsFilters>({
    interval: 'day',
    since: '',
    until: '',
    dimension: '',
    value: '',
  });
  const counts = useEventCounts(appId, filters);
  const set = (patch: Partial<AnalyticsFilters>) => setFilters((f) => ({ ...f, ...patch }));
  const totals = new Map<string, number>();
  for (const c of counts.data?.results ?? []) totals.set(c.name, (totals.get(c.name) ?? 0) + c.count);

  return (
    <div className="mx-auto max-w-6xl space-y-4 p-6">
      <div>
        <h1 className="text-xl font-semibold">Analytics</h1>
        <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
          Events sent to <code className="font-mono">POST /events/&lt;name&gt;</code>, counted per name.
        </p>
      </div>
      {counts.data && !counts.data.enabled ? (
        <div
          role="status"
          data-testid="analytics-off"
          className="rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm dark:border-amber-700 dark:bg-amber-950"
        >
          <p className="font-medium">Events are accepted but not stored.</p>
          <p className="mt-1">
            Start the service with the option{' '}
            <code className="font-mono">{'"analytics": {"adapter": "store"}'}</code> to keep events and chart
            them here.
          </p>
        </div>
      ) : (
        <>
          <div className="flex flex-wrap items-end gap-2 text-sm">
            <div className="flex flex-col">
              Interval
              <Select
                aria-label="Interval"
                value={filters.interval}
                onChange={(e) => set({ interval: e.target.value as 'hour' | 'day' })}
              >
                <option value="day">Per day</option>
                <option value="hour">Per hour</option>
              </Select>
            </div>
            <div className="flex flex-col">
              From
              <Input
                aria-label="From"
                type="datetime-local"
                value={filters.since}
                onChange={(e) => set({ since: e.target.value })}
              />
            </div>
            <div className="flex flex-col">
              To
              <Input
                aria-label="To"
                type="datetime-local"
                value={filters.until}
                onChange={(e) => set({ until: e.target.value })}
              />
            </div>
            <div className="flex flex-col">
              Dimension
              <Input
                aria-label="Dimension"
                placeholder="e.g. os"
                value={filters.dimension}
                onChange={(e) => set({ dimension: e.target.value })}
              />
            </div>
            <div className="flex flex-col">
              Value
              <Input
                aria-label="Dimension value"
                placeholder="e.g. ios"
                value={filters.value}
                onChange={(e) => set({ value: e.target.value })}
              />
            </div>
          </div>
          <QueryState
            query={counts}
            loading="Counting events…"
            failed="Could not load events"
            isEmpty={(d) => d.results.length === 0}
            empty={
              <p className="text-sm text-slate-500" data-testid="analytics-empty">
                No events match.
              </p>
            }
          >
            {({ results }) => (
              <>
                <EventsChart counts={results} />
                <table className="text-left text-sm">
                  <thead className="text-slate-500">
                    <tr>
                      <th className="pr-6">Event</th>
                      <th>Total</th>
                    </tr>
                  </thead>
                  <tbody>
                    {[...totals]
                      .sort(([a], [b]) => a.localeCompare(b))
                      .map(([name, total]) => (
                        <tr key={name} data-testid="event-total">
                          <td className="pr-6">{name}</td>
                          <td className="tabular-nums">{total}</td>
                        </tr>
                      ))}
                  </tbody>
                </table>
              </>
            )}
          </QueryState>
        </>
      )}
    </div>
  );
}
