import { type FormEvent, useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Input } from '../../../components/ui/input.tsx';
import type { AuditFilters } from '../hooks/use-audit-filters.ts';

const EMPTY: AuditFilters = { user: '', action: '', target: '', since: '', until: '' };

const TEXT_FIELDS = [
  { name: 'user', label: 'User', placeholder: 'admin' },
  { name: 'action', label: 'Action', placeholder: 'row, config.update' },
  { name: 'target', label: 'Target', placeholder: 'GameScore' },
] as const;

/** The filter bar: edits locally, applies to the URL on submit. */
export function AuditFilterBar({
  filters,
  onApply,
}: {
  filters: AuditFilters;
  onApply: (f: AuditFilters) => void;
}) {
  const [draft, setDraft] = useState(filters);
  const set = (name: keyof AuditFilters, value: string) => setDraft((d) => ({ ...d, [name]: value }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(draft);
  };
  const active = Object.values(filters).some((v) => v !== '');

  return (
    <form
      onSubmit={submit}
      aria-label="Audit filters"
      className="mb-4 flex flex-wrap items-end gap-3 rounded-md border border-slate-200 p-3 dark:border-slate-700"
    >
      {TEXT_FIELDS.map((f) => (
        <label
          key={f.name}
          htmlFor={`audit-filter-${f.name}`}
          className="flex flex-col gap-1 text-xs text-slate-600 dark:text-slate-400"
        >
          {f.label}
          <Input
            id={`audit-filter-${f.name}`}
            value={draft[f.name]}
            placeholder={f.placeholder}
            onChange={(e) => set(f.name, e.target.value)}
            className="w-40"
          />
        </label>
      ))}
      <label
        htmlFor="audit-filter-since"
        className="flex flex-col gap-1 text-xs text-slate-600 dark:text-slate-400"
      >
        Since
        <Input
          type="date"
          id="audit-filter-since"
          value={draft.since}
          max={draft.until || undefined}
          onChange={(e) => set('since', e.target.value)}
        />
      </label>
      <label
        htmlFor="audit-filter-until"
        className="flex flex-col gap-1 text-xs text-slate-600 dark:text-slate-400"
      >
        Until
        <Input
          type="date"
          id="audit-filter-until"
          value={draft.until}
          min={draft.since || undefined}
          onChange={(e) => set('until', e.target.value)}
        />
      </label>
      <div className="flex gap-2">
        <Button type="submit" variant="primary">
          Apply
        </Button>
        {active && (
          <Button
            onClick={() => {
              setDraft(EMPTY);
              onApply(EMPTY);
            }}
          >
            Clear
          </Button>
        )}
      </div>
    </form>
  );
}
