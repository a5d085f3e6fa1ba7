import { type FormEvent, useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Select } from '../../../components/ui/input.tsx';
import { errorText } from '../../../lib/api.ts';
import {
  type FromParseRun,
  useParseImport,
  useParseImportSources,
  useStartParseImport,
} from '../api/parse-import.ts';

/**
 * The Server page's "Import from parse-server" section: one of the parse-servers the console is
 * configured with (the bff's option `apps[].parseSources`, docs/transfer.md) starts the service's
 * import; a progress bar per class, then the summary. The incumbent's master key and database URL
 * stay in the bff: this page only ever sees a source's name and URL.
 */
export function ParseImport({ appId, canWrite }: { appId: string; canWrite: boolean }) {
  const sources = useParseImportSources(appId);
  const [chosen, setChosen] = useState('');
  const [sessions, setSessions] = useState(false);
  const [runId, setRunId] = useState<string | null>(null);
  const start = useStartParseImport(appId);
  const run = useParseImport(appId, runId);
  const current = run.data ?? start.data;
  const running = start.isPending || current?.status === 'running';
  const list = sources.data?.results ?? [];
  const source = list.find((s) => s.name === chosen) ?? list[0];

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!source) return;
    start.mutate({ source: source.name, sessions }, { onSuccess: (started) => setRunId(started.id) });
  };

  return (
    <section aria-labelledby="parse-import" className="mt-10">
      <h2 id="parse-import" className="mb-1 text-base font-semibold">
        Import from parse-server
      </h2>
      <p className="mb-3 text-sm text-slate-500 dark:text-slate-400">
        Brings a running parse-server app here: schemas, rows, relations, roles, files and config, read with
        its master key (nothing is written to it). Start it again later to bring only what changed and delete
        what is gone there.
      </p>
      {sources.isError && (
        <p role="alert" className="text-sm text-red-700 dark:text-red-300">
          {errorText(sources.error)}
        </p>
      )}
      {sources.isSuccess && list.length === 0 && (
        <p className="text-sm text-slate-500" data-testid="parse-import-no-sources">
          No parse-server is configured for this app. Add one to the console's configuration under{' '}
          <code>apps[].parseSources</code> (its URL, application id, master key and, for password hashes, its
          database URL): its keys stay on the console's server.
        </p>
      )}
      {list.length > 0 &&
        (canWrite ? (
          <form onSubmit={submit} aria-label="Import from parse-server" className="grid max-w-2xl gap-2">
            <label className="grid gap-1 text-sm">
              Source
              <Select value={source?.name ?? ''} onChange={(e) => setChosen(e.target.value)}>
                {list.map((s) => (
                  <option key={s.name} value={s.name}>
                    {`${s.name}: ${s.serverURL} (${s.appId})`}
                  </option>
                ))}
              </Select>
            </label>
            {source && (
              <p className="text-sm text-slate-500" data-testid="parse-import-source">
                {source.postgres
                  ? 'Its database is configured: users keep their passwords, and relations are read from its tables.'
                  : 'No database is configured: users will have to reset their passwords.'}
              </p>
            )}
            <label className="flex items-center gap-2 text-sm">
              <input type="checkbox" checked={sessions} onChange={(e) => setSessions(e.target.checked)} />
              Sessions too (signed-in users stay signed in)
            </label>
            <div>
              <Button type="submit" variant="primary" disabled={running}>
                {running ? 'Importing…' : 'Start import'}
              </Button>
            </div>
            {start.isError && (
              <p role="alert" className="text-sm text-red-700 dark:text-red-300">
                {errorText(start.error)}
              </p>
            )}
          </form>
        ) : (
          <p className="text-sm text-slate-500">Read-only console users cannot start an import.</p>
        ))}
      {current && <RunView run={current} />}
    </section>
  );
}

/** A run: a progress bar per class, then the summary (or the error that stopped it). */
function RunView({ run }: { run: FromParseRun }) {
  return (
    <div className="mt-4 max-w-2xl" data-testid="parse-import-run" data-status={run.status}>
      <p className="mb-2 text-sm">
        {run.status === 'running'
          ? `Importing from ${run.serverURL}…`
          : run.status === 'done'
            ? `Imported from ${run.serverURL}.`
            : `The import from ${run.serverURL} failed.`}
      </p>
      <ul className="grid gap-1" aria-label="Classes">
        {run.classes.map((c) => (
          <li key={c.className} className="grid grid-cols-[10rem_1fr_8rem] items-center gap-2 text-sm">
            <span className="truncate font-mono">{c.className}</span>
            <progress
              aria-label={`${c.className} progress`}
              max={Math.max(1, c.total ?? 1)}
              value={c.done ? Math.max(1, c.total ?? 1) : c.rows}
            />
            <span className="text-right tabular-nums">
              {c.rows}
              {c.total !== null ? ` / ${c.total}` : ''}
            </span>
          </li>
        ))}
      </ul>
      {run.error && (
        <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-300">
          {run.error}
        </p>
      )}
      {run.summary && <Summary summary={run.summary} />}
    </div>
  );
}

function Summary({ summary }: { summary: NonNullable<FromParseRun['summary']> }) {
  const leftOut = Object.entries(summary.authDataNotImported);
  return (
    <dl aria-label="Import summary" className="mt-3 grid grid-cols-[14rem_1fr] gap-x-3 gap-y-0.5 text-sm">
      <dt>Kind</dt>
      <dd>{summary.since ? `changes since ${summary.since}` : 'a full import'}</dd>
      <dt>Classes</dt>
      <dd>{summary.classes}</dd>
      <dt>Rows</dt>
      <dd>{summary.rows}</dd>
      <dt>Relation members</dt>
      <dd>{summary.relations}</dd>
      <dt>Files</dt>
      <dd>{summary.files}</dd>
      <dt>Password hashes</dt>
      <dd>{summary.passwords}</dd>
      <dt>Sessions</dt>
      <dd>{summary.sessions}</dd>
      <dt>Deleted here, gone there</dt>
      <dd>{summary.deleted}</dd>
      <dt>authData not imported</dt>
      <dd>{leftOut.length === 0 ? 'none' : leftOut.map(([p, n]) => `${p}: ${n} users`).join(', ')}</dd>
    </dl>
  );
}
