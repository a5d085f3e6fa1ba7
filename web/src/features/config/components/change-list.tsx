import type { ConfigChange } from '../lib/diff.ts';
import { preview } from '../lib/values.ts';

const BADGE: Record<ConfigChange['kind'], string> = {
  added: 'bg-emerald-100 text-emerald-800 dark:bg-emerald-900/60 dark:text-emerald-200',
  removed: 'bg-red-100 text-red-800 dark:bg-red-900/60 dark:text-red-200',
  changed: 'bg-amber-100 text-amber-800 dark:bg-amber-900/60 dark:text-amber-200',
  unchanged: 'bg-slate-100 text-slate-700 dark:bg-slate-800 dark:text-slate-300',
};

/** A before/after list of config changes (the save review and the history use it). */
export function ChangeList({ changes }: { changes: ConfigChange[] }) {
  if (changes.length === 0) return <p className="text-sm text-slate-500">No changes.</p>;
  return (
    <ul className="space-y-2" data-testid="config-diff">
      {changes.map((c) => (
        <li key={c.name} className="rounded-md border border-slate-200 p-2 text-sm dark:border-slate-700">
          <div className="flex items-center gap-2">
            <span className={`rounded px-1.5 py-0.5 text-xs font-medium ${BADGE[c.kind]}`}>
              {c.kind === 'unchanged' ? 'flag' : c.kind}
            </span>
            <span className="font-mono font-medium">{c.name}</span>
          </div>
          <div className="mt-1 space-y-0.5 font-mono text-xs">
            {c.kind !== 'added' && c.kind !== 'unchanged' && (
              <p className="break-all text-red-700 dark:text-red-300">− {preview(c.before)}</p>
            )}
            {c.kind !== 'removed' && c.kind !== 'unchanged' && (
              <p className="break-all text-emerald-700 dark:text-emerald-300">+ {preview(c.after)}</p>
            )}
            {c.flag && (
              <p className="text-slate-600 dark:text-slate-300">
                masterKeyOnly: {String(c.flag.before)} → {String(c.flag.after)}
              </p>
            )}
          </div>
        </li>
      ))}
    </ul>
  );
}
