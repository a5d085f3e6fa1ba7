/**
 * The class's recent changes (the Changes panel under the toolbar): every recorded write of its
 * rows, newest first, deleted rows included, filtered by who made it, a field it changed and a
 * time range. Each row links to its history in the row panel (where a deleted row is restored).
 */
import { type FormEvent, useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Input, Select } from '../../../components/ui/input.tsx';
import { errorText } from '../../../lib/api.ts';
import { columnsOf, type SchemaDoc } from '../../../lib/wire.ts';
import { useClassChanges } from '../api/history.ts';
import { callerText, fieldChanges } from '../lib/versions.ts';
import { VersionTime } from './row-history.tsx';

interface Filters {
  user: string;
  field: string;
  /** `datetime-local` values (local time), empty when unset. */
  since: string;
  until: string;
}

const EMPTY: Filters = { user: '', field: '', since: '', until: '' };

/** The service's query: ISO times, nothing for an empty filter. */
const toQuery = (f: Filters) => ({
  user: f.user.trim() || undefined,
  field: f.field || undefined,
  since: f.since ? new Date(f.since).toISOString() : undefined,
  until: f.until ? new Date(f.until).toISOString() : undefined,
});

const label = 'flex flex-col gap-1 text-xs text-slate-600 dark:text-slate-400';

export function RecentChanges({
  appId,
  schema,
  onOpenHistory,
}: {
  appId: string;
  schema: SchemaDoc;
  onOpenHistory(objectId: string): void;
}) {
  const cls = schema.className;
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [applied, setApplied] = useState<Filters>(EMPTY);
  const query = toQuery(applied);
  const q = useClassChanges(appId, cls, query);
  const versions = q.data?.pages.flatMap((p) => p.results) ?? [];
  const set = (name: keyof Filters, value: string) => setDraft((d) => ({ ...d, [name]: value }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setApplied(draft);
  };
  const active = Object.values(applied).some((v) => v !== '');

  return (
    <section className="max-h-[45vh] overflow-auto border-b p-2 text-sm" data-testid="recent-changes">
      <h2 className="font-semibold">Recent changes of {cls}</h2>
      <form onSubmit={submit} aria-label="Change filters" className="my-2 flex flex-wrap items-end gap-2">
        <label className={label}>
          Changed by
          <Input
            value={draft.user}
            placeholder="console user or user id"
            onChange={(e) => set('user', e.target.value)}
            className="w-44"
          />
        </label>
        <label className={label}>
          Field
          <Select value={draft.field} onChange={(e) => set('field', e.target.value)}>
            <option value="">any field</option>
            {columnsOf(schema).map((f) => (
              <option key={f} value={f}>
                {f}
              </option>
            ))}
          </Select>
        </label>
        <label className={label}>
          Since
          <Input
            type="datetime-local"
            value={draft.since}
            max={draft.until || undefined}
            onChange={(e) => set('since', e.target.value)}
          />
        </label>
        <label className={label}>
          Until
          <Input
            type="datetime-local"
            value={draft.until}
            min={draft.since || undefined}
            onChange={(e) => set('until', e.target.value)}
          />
        </label>
        <Button type="submit" variant="primary">
          Apply
        </Button>
        {active && (
          <Button
            onClick={() => {
              setDraft(EMPTY);
              setApplied(EMPTY);
            }}
          >
            Clear
          </Button>
        )}
      </form>
      <QueryState
        query={q}
        loading="Loading the changes…"
        failed="Could not load the changes"
        errorText={errorText}
        inline
        isEmpty={() => versions.length === 0}
        empty={
          <p className="text-xs text-gray-500" data-testid="changes-empty">
            No recorded change matches.
          </p>
        }
      >
        {() => (
          <table className="w-full text-left text-xs" data-testid="changes-table">
            <thead className="text-gray-500">
              <tr>
                <th className="pr-2">Time</th>
                <th className="pr-2">Row</th>
                <th className="pr-2">Change</th>
                <th className="pr-2">By</th>
                <th className="pr-2">Source</th>
                <th>Fields</th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr
                  key={v.id}
                  className="border-t align-top"
                  data-testid="change-row"
                  data-object-id={v.objectId}
                  data-op={v.op}
                >
                  <td className="pr-2 whitespace-nowrap">
                    <VersionTime time={v.time} />
                  </td>
                  <td className="pr-2">
                    <button
                      type="button"
                      className="font-mono text-blue-700 underline dark:text-blue-300"
                      aria-label={`history of ${v.objectId}`}
                      onClick={() => onOpenHistory(v.objectId)}
                    >
                      {v.objectId}
                    </button>
                  </td>
                  <td className="pr-2" data-testid="change-op">
                    {v.op}
                  </td>
                  <td className="pr-2" data-testid="change-who">
                    {callerText(v.caller)}
                  </td>
                  <td className="pr-2">{v.source}</td>
                  <td className="font-mono" data-testid="change-fields">
                    {v.op === 'delete'
                      ? ''
                      : fieldChanges(v.before, v.after)
                          .map((c) => c.field)
                          .join(', ')}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </QueryState>
      {q.hasNextPage && (
        <Button
          size="sm"
          className="mt-2"
          onClick={() => void q.fetchNextPage()}
          disabled={q.isFetchingNextPage}
        >
          {q.isFetchingNextPage ? 'Loading…' : 'Load more changes'}
        </Button>
      )}
    </section>
  );
}
