import { type FormEvent, useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Input, Select } from '../../../components/ui/input.tsx';
import { isoOfLocal, type LogFilters, localOfIso } from '../lib/filters.ts';

const label = 'flex flex-col gap-1 text-xs text-slate-500 dark:text-slate-400';

export interface FiltersFormProps {
  filters: LogFilters;
  onApply(filters: LogFilters): void;
}

/** The filters of GET /logs: applied together with Apply, all removed with Clear. */
export function FiltersForm({ filters, onApply }: FiltersFormProps) {
  const [draft, setDraft] = useState<LogFilters>(filters);
  const [from, setFrom] = useState(localOfIso(filters.from));
  const [to, setTo] = useState(localOfIso(filters.to));
  const set = (name: keyof LogFilters) => (e: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: e.target.value }));

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const next: LogFilters = { ...draft, from: isoOfLocal(from), to: isoOfLocal(to) };
    for (const key of Object.keys(next) as Array<keyof LogFilters>) if (!next[key]?.trim()) delete next[key];
    onApply(next);
  };
  const clear = () => {
    setDraft({});
    setFrom('');
    setTo('');
    onApply({});
  };

  return (
    <form
      onSubmit={submit}
      className="mb-4 grid grid-cols-2 gap-3 md:grid-cols-5"
      aria-label="Log filters"
      data-testid="log-filters"
    >
      <label className={label}>
        From
        <Input
          type="datetime-local"
          aria-label="From"
          value={from}
          onChange={(e) => setFrom(e.target.value)}
        />
      </label>
      <label className={label}>
        To
        <Input type="datetime-local" aria-label="To" value={to} onChange={(e) => setTo(e.target.value)} />
      </label>
      <label className={label}>
        Status
        <Input
          aria-label="Status"
          placeholder="404 or 4xx"
          value={draft.status ?? ''}
          onChange={set('status')}
        />
      </label>
      <label className={label}>
        Code
        <Input
          aria-label="Code"
          placeholder="101"
          inputMode="numeric"
          value={draft.code ?? ''}
          onChange={set('code')}
        />
      </label>
      <label className={label}>
        Slower than (ms)
        <Input
          aria-label="Slower than (ms)"
          inputMode="decimal"
          placeholder="100"
          value={draft.slowerThan ?? ''}
          onChange={set('slowerThan')}
        />
      </label>
      <label className={label}>
        Path contains
        <Input
          aria-label="Path contains"
          placeholder="/classes/"
          value={draft.path ?? ''}
          onChange={set('path')}
        />
      </label>
      <label className={label}>
        Class
        <Input
          aria-label="Class"
          placeholder="GameScore"
          value={draft.className ?? ''}
          onChange={set('className')}
        />
      </label>
      <label className={label}>
        User id
        <Input aria-label="User id" placeholder="objectId" value={draft.user ?? ''} onChange={set('user')} />
      </label>
      <label className={label}>
        Caller
        <Select aria-label="Caller" value={draft.caller ?? ''} onChange={set('caller')}>
          <option value="">any</option>
          <option value="master">master</option>
          <option value="user">user</option>
          <option value="anonymous">anonymous</option>
        </Select>
      </label>
      <label className={label}>
        Request id
        <Input aria-label="Request id" value={draft.requestId ?? ''} onChange={set('requestId')} />
      </label>
      <div className="col-span-2 flex gap-2 md:col-span-5">
        <Button type="submit" variant="primary">
          Apply
        </Button>
        <Button type="button" onClick={clear}>
          Clear
        </Button>
      </div>
    </form>
  );
}
