import { useMemo, useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Input, Select, Textarea } from '../../../components/ui/input.tsx';
import { parseParams } from '../../../lib/json-params.ts';
import {
  type CatchUpPolicy,
  type ScheduleList,
  type ScheduleRow,
  useDeleteSchedule,
  useSaveSchedule,
  useSchedules,
} from '../api/cloud.ts';
import { formatInZone, formatLocal, instantIn, localZone, previewCron, wallClockIn } from '../lib/cron.ts';

type CatchUpDefault = ScheduleList['catchUp'];

interface Draft {
  id?: string;
  jobName: string;
  cron: string;
  timeZone: string;
  params: string;
  enabled: boolean;
  /** The start date (`datetime-local`) on the schedule zone's wall clock; '' for none. */
  startAt: string;
  /** '' for the service's default. */
  catchUp: CatchUpPolicy | '';
  /** What the row held, so clearing a field removes it. */
  had?: { startAt: boolean; catchUp: boolean };
}

const draftOf = (row: ScheduleRow): Draft => ({
  id: row.objectId,
  jobName: row.jobName,
  cron: row.cron,
  timeZone: row.timeZone,
  params: JSON.stringify(row.params ?? {}),
  enabled: row.enabled,
  startAt: row.startAfter ? wallClockIn(row.startAfter.iso, row.timeZone) : '',
  catchUp: row.catchUp ?? '',
  had: { startAt: row.startAfter !== undefined, catchUp: row.catchUp !== undefined },
});

const CATCH_UP_TEXT: Record<CatchUpPolicy, (max: number) => string> = {
  once: () => 'once: one run for all missed ticks',
  each: (max) => `each: one run per missed tick (at most ${max})`,
  skip: () => 'skip: no run for missed ticks',
};

/** A schedule's policy for ticks missed while the service was down: its own, or the service's. */
export function catchUpOf(row: ScheduleRow, fallback: CatchUpDefault): string {
  const policy = row.catchUp ?? fallback.policy;
  const words = policy === 'each' ? `each (at most ${fallback.max})` : policy;
  return row.catchUp ? words : `${words} (service default)`;
}

/**
 * The cron field's preview: the expression in plain words and the next five runs (none before the
 * start date), computed and shown in the schedule's own time zone, as the service runs them.
 */
export function CronPreview({ cron, timeZone, startAt }: { cron: string; timeZone: string; startAt?: Date }) {
  const preview = useMemo(() => previewCron(cron, timeZone, startAt), [cron, timeZone, startAt]);
  const zone = timeZone || 'UTC';
  return (
    <div data-testid="cron-preview" className="rounded bg-slate-50 p-3 text-sm dark:bg-slate-900">
      <p className={preview.ok ? '' : 'text-red-600'}>{preview.words}</p>
      {preview.ok && (
        <>
          <p className="mt-2 text-xs text-slate-500">
            Next five runs{startAt ? ' from the start date' : ''} in the schedule’s time zone ({zone}):
          </p>
          <ol className="mt-1 list-decimal pl-5 font-mono text-xs" aria-label="Next runs">
            {preview.next.map((d) => (
              <li key={d.toISOString()}>
                <time dateTime={d.toISOString()}>{formatInZone(d, zone)}</time>
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  );
}

function ScheduleForm({
  appId,
  jobs,
  initial,
  catchUpDefault,
  onDone,
}: {
  appId: string;
  jobs: string[];
  initial: Draft;
  catchUpDefault: CatchUpDefault;
  onDone: () => void;
}) {
  const [draft, setDraft] = useState(initial);
  const [problem, setProblem] = useState<string | null>(null);
  const save = useSaveSchedule(appId);
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }));
  const startAt = useMemo(
    () => (draft.startAt ? instantIn(draft.startAt, draft.timeZone) : null),
    [draft.startAt, draft.timeZone],
  );
  return (
    <form
      className="space-y-3 rounded border border-slate-200 p-4 text-sm dark:border-slate-700"
      aria-label={draft.id ? 'Edit schedule' : 'New schedule'}
      onSubmit={(e) => {
        e.preventDefault();
        const params = parseParams(draft.params);
        if (!params.ok) return setProblem(params.error);
        if (draft.startAt && !startAt)
          return setProblem(`The start date is not a date and time in ${draft.timeZone || 'UTC'}.`);
        setProblem(null);
        const input = {
          jobName: draft.jobName,
          cron: draft.cron,
          timeZone: draft.timeZone,
          params: params.value,
          enabled: draft.enabled,
          ...(startAt
            ? { startAfter: startAt.toISOString() }
            : draft.had?.startAt
              ? { startAfter: null }
              : {}),
          ...(draft.catchUp ? { catchUp: draft.catchUp } : draft.had?.catchUp ? { catchUp: null } : {}),
        };
        save.mutate({ id: draft.id, input }, { onSuccess: onDone });
      }}
    >
      <div className="flex flex-wrap gap-3">
        <label>
          Scheduled job
          <Select
            aria-label="Scheduled job"
            className="ml-2"
            value={draft.jobName}
            onChange={(e) => set({ jobName: e.target.value })}
          >
            {jobs.map((j) => (
              <option key={j}>{j}</option>
            ))}
          </Select>
        </label>
        <label>
          Cron
          <Input
            aria-label="Cron"
            className="ml-2 font-mono"
            value={draft.cron}
            onChange={(e) => set({ cron: e.target.value })}
          />
        </label>
        <label>
          Time zone
          <Input
            aria-label="Time zone"
            className="ml-2"
            value={draft.timeZone}
            onChange={(e) => set({ timeZone: e.target.value })}
          />
        </label>
        <label>
          Start date <span className="text-xs text-slate-500">({draft.timeZone || 'UTC'})</span>
          <Input
            aria-label="Start date"
            type="datetime-local"
            className="ml-2"
            title="On the schedule's time zone's clock: no run before it"
            value={draft.startAt}
            onChange={(e) => set({ startAt: e.target.value })}
          />
        </label>
        <label>
          Catch-up
          <Select
            aria-label="Catch-up"
            className="ml-2"
            value={draft.catchUp}
            onChange={(e) => set({ catchUp: e.target.value as Draft['catchUp'] })}
          >
            <option value="">Service default ({catchUpDefault.policy})</option>
            {(['once', 'each', 'skip'] as const).map((policy) => (
              <option key={policy} value={policy}>
                {CATCH_UP_TEXT[policy](catchUpDefault.max)}
              </option>
            ))}
          </Select>
        </label>
        <label className="flex items-center gap-1">
          <input
            type="checkbox"
            checked={draft.enabled}
            onChange={(e) => set({ enabled: e.target.checked })}
          />
          Enabled
        </label>
      </div>
      <CronPreview cron={draft.cron} timeZone={draft.timeZone} startAt={startAt ?? undefined} />
      <label className="block">
        Schedule params (JSON)
        <Textarea
          aria-label="Schedule params (JSON)"
          className="mt-1 block h-16 w-full"
          value={draft.params}
          onChange={(e) => set({ params: e.target.value })}
        />
      </label>
      {(problem || save.error) && (
        <p role="alert" className="text-red-600">
          {problem ?? save.error?.message}
        </p>
      )}
      <div className="flex gap-2">
        <Button type="submit" variant="primary" disabled={save.isPending}>
          Save schedule
        </Button>
        <Button onClick={onDone}>Cancel</Button>
      </div>
    </form>
  );
}

/** Schedules (`_JobSchedule`): create, edit, pause, delete; the service runs them. */
export function SchedulesPanel({
  appId,
  jobs,
  canWrite,
}: {
  appId: string;
  jobs: string[];
  canWrite: boolean;
}) {
  const schedules = useSchedules(appId);
  const save = useSaveSchedule(appId);
  const remove = useDeleteSchedule(appId);
  const [editing, setEditing] = useState<Draft | null>(null);

  return (
    <div className="space-y-4">
      {canWrite && !editing && jobs.length > 0 && (
        <Button
          variant="primary"
          onClick={() =>
            setEditing({
              jobName: jobs[0]!,
              cron: '0 * * * *',
              timeZone: localZone(),
              params: '{}',
              enabled: true,
              startAt: '',
              catchUp: '',
            })
          }
        >
          New schedule
        </Button>
      )}
      {editing && schedules.data && (
        <ScheduleForm
          key={editing.id ?? 'new'}
          appId={appId}
          jobs={jobs}
          initial={editing}
          catchUpDefault={schedules.data.catchUp}
          onDone={() => setEditing(null)}
        />
      )}
      {(save.error || remove.error) && (
        <p role="alert" className="text-sm text-red-600">
          {(save.error ?? remove.error)?.message}
        </p>
      )}
      <QueryState
        query={schedules}
        loading="Loading schedules…"
        failed="Could not load schedules"
        isEmpty={(d) => d.results.length === 0}
        empty={<p className="text-sm text-slate-500">No schedules yet.</p>}
      >
        {({ results, catchUp }) => (
          <table className="w-full text-left text-sm" data-testid="schedules">
            <thead className="text-xs text-slate-500 uppercase">
              <tr>
                <th className="py-1">Job</th>
                <th>When</th>
                <th>Next run (your time)</th>
                <th>Last run</th>
                <th>Missed ticks</th>
                <th>State</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {results.map((row) => (
                <tr
                  key={row.objectId}
                  className="border-t border-slate-100 dark:border-slate-800"
                  data-testid={`schedule-${row.objectId}`}
                >
                  <td className="py-1 font-mono">{row.jobName}</td>
                  <td>
                    <span className="font-mono">{row.cron}</span>{' '}
                    <span className="text-xs text-slate-500">
                      {previewCron(row.cron, row.timeZone).words}
                      {row.startAfter && `, from ${formatInZone(row.startAfter.iso, row.timeZone)}`}
                    </span>
                  </td>
                  <td>{row.nextRunAt ? formatLocal(row.nextRunAt.iso) : '—'}</td>
                  <td>{row.lastRunAt ? formatLocal(row.lastRunAt.iso) : '—'}</td>
                  <td data-testid="schedule-catch-up">{catchUpOf(row, catchUp)}</td>
                  <td>{row.enabled ? 'active' : 'paused'}</td>
                  <td className="space-x-1 text-right whitespace-nowrap">
                    {canWrite && (
                      <>
                        <Button size="sm" onClick={() => setEditing(draftOf(row))}>
                          Edit
                        </Button>
                        <Button
                          size="sm"
                          onClick={() => save.mutate({ id: row.objectId, input: { enabled: !row.enabled } })}
                        >
                          {row.enabled ? 'Pause' : 'Resume'}
                        </Button>
                        <Button size="sm" variant="danger" onClick={() => remove.mutate(row.objectId)}>
                          Delete
                        </Button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </QueryState>
    </div>
  );
}
