import { useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { Select, Textarea } from '../../../components/ui/input.tsx';
import { useCloudCode } from '../../../hooks/use-cloud-code.ts';
import { errorText } from '../../../lib/api.ts';
import { parseParams } from '../../../lib/json-params.ts';
import { useRunOnRows } from '../api/run-on-rows.ts';

const rowsText = (n: number) => `${n} selected ${n === 1 ? 'row' : 'rows'}`;

/**
 * The data browser's "Run function" on the selected rows: the function runs once per row, as
 * master, with the row's className and objectId added to the params; each row gets its answer.
 */
export function RunOnRowsBar({
  appId,
  className,
  objectIds,
}: {
  appId: string;
  className: string;
  objectIds: string[];
}) {
  const [open, setOpen] = useState(false);
  return (
    <div className="flex items-center gap-2 border-b px-2 py-1 text-sm" data-testid="run-on-rows-bar">
      <Button size="sm" onClick={() => setOpen(true)}>
        Run function on {rowsText(objectIds.length)}…
      </Button>
      {open && (
        <RunOnRowsDialog
          appId={appId}
          className={className}
          objectIds={objectIds}
          onClose={() => setOpen(false)}
        />
      )}
    </div>
  );
}

function RunOnRowsDialog({
  appId,
  className,
  objectIds,
  onClose,
}: {
  appId: string;
  className: string;
  objectIds: string[];
  onClose(): void;
}) {
  const code = useCloudCode(appId);
  const functions = [
    ...new Set([
      ...(code.data?.functions ?? []),
      ...(code.data?.webhookFunctions ?? []).map((h) => h.functionName),
    ]),
  ].sort();
  const [chosen, setChosen] = useState('');
  const name = chosen || functions[0] || '';
  const [params, setParams] = useState('{}');
  const [problem, setProblem] = useState<string | null>(null);
  const run = useRunOnRows(appId);
  const submit = () => {
    const parsed = parseParams(params);
    if (!parsed.ok) return setProblem(parsed.error);
    if (!name) return setProblem('This app has no function to run.');
    setProblem(null);
    run.mutate({ name, className, objectIds, params: parsed.value });
  };
  return (
    <Dialog
      open
      title={`Run a function on ${rowsText(objectIds.length)} of ${className}`}
      onClose={onClose}
      wide
    >
      <div className="space-y-3 text-sm">
        <p className="text-slate-600 dark:text-slate-400">
          The function runs once per row, with the master key; its params get the row’s{' '}
          <code className="font-mono">className</code> and <code className="font-mono">objectId</code>.
        </p>
        <QueryState query={code} loading="Loading functions…" failed="Could not load the functions" inline>
          {() => (
            <form
              className="space-y-2"
              onSubmit={(e) => {
                e.preventDefault();
                submit();
              }}
            >
              <label className="block">
                Function
                <Select
                  aria-label="Function to run"
                  className="ml-2"
                  value={name}
                  onChange={(e) => setChosen(e.target.value)}
                >
                  {functions.map((f) => (
                    <option key={f}>{f}</option>
                  ))}
                </Select>
              </label>
              <label className="block">
                Other params (JSON)
                <Textarea
                  aria-label="Other params (JSON)"
                  className="mt-1 block h-16 w-full"
                  value={params}
                  onChange={(e) => setParams(e.target.value)}
                />
              </label>
              <Button type="submit" variant="primary" disabled={run.isPending || functions.length === 0}>
                {run.isPending ? 'Running…' : `Run on ${rowsText(objectIds.length)}`}
              </Button>
            </form>
          )}
        </QueryState>
        {(problem || run.error) && (
          <p role="alert" className="text-red-600">
            {problem ?? errorText(run.error)}
          </p>
        )}
        {run.data && (
          <div data-testid="run-on-rows-result">
            <p className="mb-1" data-testid="run-on-rows-summary">
              {run.data.succeeded} succeeded, {run.data.failed} failed.
            </p>
            <table className="w-full text-left">
              <thead className="text-xs text-slate-500 uppercase">
                <tr>
                  <th className="py-1">Row</th>
                  <th>Answer</th>
                </tr>
              </thead>
              <tbody>
                {run.data.results.map((r) => (
                  <tr
                    key={r.objectId}
                    data-testid="row-answer"
                    data-row={r.objectId}
                    className="border-t border-slate-100 align-top dark:border-slate-800"
                  >
                    <td className="py-1 pr-3 font-mono">{r.objectId}</td>
                    <td className={r.ok ? '' : 'text-red-600'}>
                      <pre className="font-mono text-xs whitespace-pre-wrap">
                        {r.ok ? JSON.stringify(r.result) : `Error ${r.code}: ${r.error}`}
                      </pre>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </Dialog>
  );
}
