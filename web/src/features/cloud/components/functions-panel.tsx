import { useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Select, Textarea } from '../../../components/ui/input.tsx';
import { type UserHit, UserPicker, userName } from '../../../components/user-picker.tsx';
import type { CloudCode } from '../../../hooks/use-cloud-code.ts';
import { parseParams } from '../../../lib/json-params.ts';
import { useRunFunction } from '../api/cloud.ts';

/** Functions (in-process and webhook): run one with JSON params as master or as a chosen user. */
export function FunctionsPanel({
  appId,
  code,
  canWrite,
}: {
  appId: string;
  code: CloudCode;
  canWrite: boolean;
}) {
  const all = [
    ...code.functions.map((name) => ({ name, kind: 'cloud code' })),
    ...code.webhookFunctions
      .filter((h) => !code.functions.includes(h.functionName))
      .map((h) => ({ name: h.functionName, kind: 'webhook' })),
  ];
  const [name, setName] = useState(all[0]?.name ?? '');
  const [params, setParams] = useState('{}');
  const [runAs, setRunAs] = useState<'master' | 'user'>('master');
  const [user, setUser] = useState<UserHit | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const run = useRunFunction(appId);

  if (all.length === 0) {
    return (
      <p className="text-sm text-slate-500">
        No functions yet: define one with cloud.define() or register a webhook.
      </p>
    );
  }
  const submit = () => {
    const parsed = parseParams(params);
    if (!parsed.ok) return setProblem(parsed.error);
    if (runAs === 'user' && !user) return setProblem('Pick the user to run the function as.');
    setProblem(null);
    run.mutate({ name, params: parsed.value, userId: runAs === 'user' ? user?.objectId : undefined });
  };
  const answer = run.data;
  return (
    <div className="grid gap-6 md:grid-cols-[14rem_1fr]">
      <ul className="space-y-1 text-sm" aria-label="Functions">
        {all.map((f) => (
          <li key={f.name}>
            <button
              type="button"
              onClick={() => setName(f.name)}
              className={`w-full rounded px-2 py-1 text-left ${f.name === name ? 'bg-indigo-100 dark:bg-indigo-900/50' : 'hover:bg-slate-100 dark:hover:bg-slate-800'}`}
            >
              <span className="font-mono">{f.name}</span>{' '}
              <span className="text-xs text-slate-500">{f.kind}</span>
            </button>
          </li>
        ))}
      </ul>
      <form
        className="space-y-3"
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <label className="block text-sm">
          Function
          <Select
            aria-label="Function"
            className="ml-2"
            value={name}
            onChange={(e) => setName(e.target.value)}
          >
            {all.map((f) => (
              <option key={f.name}>{f.name}</option>
            ))}
          </Select>
        </label>
        <label className="block text-sm">
          Params (JSON)
          <Textarea
            aria-label="Params (JSON)"
            className="mt-1 block h-24 w-full"
            value={params}
            onChange={(e) => setParams(e.target.value)}
          />
        </label>
        <div className="flex flex-wrap items-center gap-3 text-sm">
          <label>
            Run as
            <Select
              aria-label="Run as"
              className="ml-2"
              value={runAs}
              onChange={(e) => setRunAs(e.target.value as 'master' | 'user')}
            >
              <option value="master">master key</option>
              <option value="user">a user</option>
            </Select>
          </label>
          {runAs === 'user' && (
            <span className="flex items-center gap-2">
              <UserPicker appId={appId} label="Username" width="w-40" onPick={setUser} />
              {user ? (
                <span data-testid="run-as-user">
                  as <strong>{userName(user)}</strong>
                </span>
              ) : (
                <span className="text-xs text-slate-500">No user chosen.</span>
              )}
            </span>
          )}
          <Button type="submit" variant="primary" disabled={!canWrite || run.isPending}>
            {run.isPending ? 'Running…' : 'Run function'}
          </Button>
        </div>
        {!canWrite && <p className="text-xs text-slate-500">Read-only console users cannot run functions.</p>}
        {(problem || run.error) && (
          <p role="alert" className="text-sm text-red-600">
            {problem ?? run.error?.message}
          </p>
        )}
        {answer && (
          <div
            data-testid="function-result"
            className="rounded border border-slate-200 p-3 text-sm dark:border-slate-700"
          >
            <p className="mb-1 text-slate-500">
              {answer.ok ? 'Result' : `Error ${answer.code}`} in {answer.durationMs} ms
            </p>
            <pre className="overflow-auto font-mono text-xs whitespace-pre-wrap">
              {answer.ok ? JSON.stringify(answer.result, null, 2) : answer.error}
            </pre>
          </div>
        )}
      </form>
    </div>
  );
}
