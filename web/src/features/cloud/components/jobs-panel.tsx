import { useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Select, Textarea } from '../../../components/ui/input.tsx';
import { parseParams } from '../../../lib/json-params.ts';
import { type JobStatusRow, useJobHistory, useRunJob } from '../api/cloud.ts';
import { formatLocal } from '../lib/cron.ts';

const duration = (row: JobStatusRow): string => {
  if (!row.startedAt || !row.finishedAt) return '—';
  const ms = Date.parse(row.finishedAt.iso) - Date.parse(row.startedAt.iso);
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
};

const STATUS_STYLE: Record<JobStatusRow['status'], string> = {
  running: 'text-amber-600',
  succeeded: 'text-emerald-600',
  failed: 'text-red-600',
};

/** Jobs: run one with params; `_JobStatus` history with live status, message and duration. */
export function JobsPanel({ appId, jobs, canWrite }: { appId: string; jobs: string[]; canWrite: boolean }) {
  const [name, setName] = useState(jobs[0] ?? '');
  const [params, setParams] = useState('{}');
  const [problem, setProblem] = useState<string | null>(null);
  const run = useRunJob(appId);
  const history = useJobHistory(appId);

  return (
    <div className="space-y-6">
      {jobs.length === 0 ? (
        <p className="text-sm text-slate-500">No jobs yet: define one with cloud.job().</p>
      ) : (
        <form
          className="flex flex-wrap items-end gap-3 text-sm"
          onSubmit={(e) => {
            e.preventDefault();
            const parsed = parseParams(params);
            if (!parsed.ok) return setProblem(parsed.error);
            setProblem(null);
            run.mutate({ name, params: parsed.value });
          }}
        >
          <label>
            Job
            <Select aria-label="Job" className="ml-2" value={name} onChange={(e) => setName(e.target.value)}>
              {jobs.map((j) => (
                <option key={j}>{j}</option>
              ))}
            </Select>
          </label>
          <label className="flex-1">
            Job params (JSON)
            <Textarea
              aria-label="Job params (JSON)"
              className="mt-1 block h-10 w-full"
              value={params}
              onChange={(e) => setParams(e.target.value)}
            />
          </label>
          <Button type="submit" variant="primary" disabled={!canWrite || run.isPending}>
            Run job
          </Button>
        </form>
      )}
      {run.data && (
        <p className="text-sm text-slate-600 dark:text-slate-300" data-testid="job-started">
          Started {run.variables?.name}: status {run.data.statusId}
        </p>
      )}
      {(problem || run.error) && (
        <p role="alert" className="text-sm text-red-600">
          {problem ?? run.error?.message}
        </p>
      )}
      <section>
        <h2 className="mb-2 font-medium">Runs</h2>
        <QueryState
          query={history}
          loading="Loading job runs…"
          failed="Could not load job runs"
          isEmpty={(d) => d.results.length === 0}
          empty={<p className="text-sm text-slate-500">No job has run yet.</p>}
        >
          {({ results }) => (
            <table className="w-full text-left text-sm" data-testid="job-history">
              <thead className="text-xs text-slate-500 uppercase">
                <tr>
                  <th className="py-1">Job</th>
                  <th>Source</th>
                  <th>Status</th>
                  <th>Message</th>
                  <th>Started</th>
                  <th>Duration</th>
                </tr>
              </thead>
              <tbody>
                {results.map((row) => (
                  <tr key={row.objectId} className="border-t border-slate-100 dark:border-slate-800">
                    <td className="py-1 font-mono">{row.jobName}</td>
                    <td>{row.source}</td>
                    <td className={STATUS_STYLE[row.status]} data-testid={`job-status-${row.objectId}`}>
                      {row.status}
                    </td>
                    <td>{row.message}</td>
                    <td>{row.startedAt ? formatLocal(row.startedAt.iso) : '—'}</td>
                    <td>{duration(row)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </QueryState>
      </section>
    </div>
  );
}
