import { QueryState } from '../../../components/query-state.tsx';
import { useConfigHistory } from '../api/config.ts';
import { type ConfigDoc, diffConfig } from '../lib/diff.ts';
import { ChangeList } from './change-list.tsx';

/** Config changes from the audit log: who, when, and what changed. */
export function ConfigHistory({ appId }: { appId: string }) {
  const history = useConfigHistory(appId, true);
  return (
    <QueryState
      query={history}
      loading="Loading history…"
      failed="Could not load the audit log"
      isEmpty={(entries) => entries.length === 0}
      empty={<p className="text-sm text-slate-500">No config changes were made through the console yet.</p>}
    >
      {(entries) => (
        <ol className="space-y-4" data-testid="config-history">
          {entries.map((entry) => (
            <li key={entry.id}>
              <p className="mb-1 text-sm">
                <span className="font-medium">{entry.user}</span>{' '}
                <time dateTime={entry.at} title={entry.at} className="text-slate-500 dark:text-slate-400">
                  {new Date(entry.at).toLocaleString()}
                </time>
              </p>
              <ChangeList changes={diffConfig(entry.before as ConfigDoc, entry.after as ConfigDoc)} />
            </li>
          ))}
        </ol>
      )}
    </QueryState>
  );
}
