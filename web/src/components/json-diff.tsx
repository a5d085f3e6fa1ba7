import { useMemo } from 'react';
import { diffJson, type JsonChange, preview } from '../lib/json-diff.ts';

const MARK: Record<JsonChange['kind'], { sign: string; className: string }> = {
  added: { sign: '+', className: 'text-emerald-700 dark:text-emerald-400' },
  removed: { sign: '−', className: 'text-red-700 dark:text-red-400' },
  changed: { sign: '~', className: 'text-amber-700 dark:text-amber-400' },
};

const pretty = (value: unknown): string =>
  value === null || value === undefined ? '—' : JSON.stringify(value, null, 2);

/** An entry's before/after: what changed by path, and both documents side by side. */
export function JsonDiff({ before, after }: { before: unknown; after: unknown }) {
  const changes = useMemo(() => diffJson(before, after), [before, after]);
  return (
    <div className="space-y-3" data-testid="audit-diff">
      {changes.length === 0 ? (
        <p className="text-xs text-slate-500">No difference between before and after.</p>
      ) : (
        <ul className="space-y-0.5 font-mono text-xs">
          {changes.map((c) => (
            <li key={`${c.kind}:${c.path}`} className={MARK[c.kind].className}>
              <span className="inline-block w-4">{MARK[c.kind].sign}</span>
              <span className="font-semibold">{c.path || '(value)'}</span>
              {c.kind === 'changed' ? (
                <span>
                  : {preview(c.before)} → {preview(c.after)}
                </span>
              ) : (
                <span>: {preview(c.kind === 'added' ? c.after : c.before)}</span>
              )}
            </li>
          ))}
        </ul>
      )}
      <div className="grid gap-3 md:grid-cols-2">
        {(
          [
            ['Before', before],
            ['After', after],
          ] as const
        ).map(([label, value]) => (
          <figure key={label} className="min-w-0">
            <figcaption className="mb-1 text-xs font-semibold tracking-wide text-slate-500 uppercase">
              {label}
            </figcaption>
            <pre className="max-h-80 overflow-auto rounded-md bg-slate-50 p-2 font-mono text-xs dark:bg-slate-900">
              {pretty(value)}
            </pre>
          </figure>
        ))}
      </div>
    </div>
  );
}
