import { Fragment, useState } from 'react';
import { Link } from 'react-router';
import { JsonDiff } from '../../../components/json-diff.tsx';
import { rowHistoryPath, rowOfTarget } from '../../../lib/row-history.ts';
import type { AuditEntry } from '../api/audit.ts';

const cell = 'px-3 py-2 align-top';

/** The row an entry touched (target `<Class>/<objectId>`), whose history the entry links to. */
const rowOf = (e: AuditEntry) => (e.target.startsWith('hooks/') ? null : rowOfTarget(e.target));

/**
 * Audit entries, newest first; a row expands to its before/after diff; an entry on a row links to
 * the row's history.
 */
export function AuditTable({ entries }: { entries: AuditEntry[] }) {
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set());
  const toggle = (id: number) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  return (
    <div className="overflow-x-auto rounded-md border border-slate-200 dark:border-slate-700">
      <table className="w-full text-left text-sm" data-testid="audit-table">
        <thead className="bg-slate-50 text-xs text-slate-500 uppercase dark:bg-slate-800 dark:text-slate-400">
          <tr>
            <th className={`${cell} w-8`}>
              <span className="sr-only">Details</span>
            </th>
            <th className={cell}>Time</th>
            <th className={cell}>User</th>
            <th className={cell}>App</th>
            <th className={cell}>Action</th>
            <th className={cell}>Target</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-200 dark:divide-slate-700">
          {entries.map((e) => {
            const expanded = open.has(e.id);
            const touched = rowOf(e);
            return (
              <Fragment key={e.id}>
                <tr
                  data-testid="audit-row"
                  data-action={e.action}
                  className="hover:bg-slate-50 dark:hover:bg-slate-800/50"
                >
                  <td className={cell}>
                    <button
                      type="button"
                      aria-expanded={expanded}
                      aria-controls={`audit-diff-${e.id}`}
                      aria-label={`${expanded ? 'Hide' : 'Show'} changes of entry ${e.id}`}
                      onClick={() => toggle(e.id)}
                      className="rounded px-1 text-slate-500 hover:bg-slate-200 dark:hover:bg-slate-700"
                    >
                      {expanded ? '▾' : '▸'}
                    </button>
                  </td>
                  <td className={`${cell} whitespace-nowrap`}>
                    <time dateTime={e.at} title={e.at}>
                      {new Date(e.at).toLocaleString()}
                    </time>
                  </td>
                  <td className={cell} data-testid="audit-user">
                    {e.user}
                  </td>
                  <td className={`${cell} text-slate-500 dark:text-slate-400`}>{e.app}</td>
                  <td className={`${cell} font-mono text-xs`} data-testid="audit-action">
                    {e.action}
                  </td>
                  <td className={`${cell} font-mono text-xs break-all`}>
                    <span data-testid="audit-target">{e.target}</span>
                    {touched && (
                      <Link
                        className="ml-2 font-sans text-indigo-700 underline dark:text-indigo-300"
                        to={rowHistoryPath(e.app, touched.className, touched.objectId)}
                        aria-label={`History of ${e.target}`}
                      >
                        History
                      </Link>
                    )}
                  </td>
                </tr>
                {expanded && (
                  <tr id={`audit-diff-${e.id}`}>
                    <td />
                    <td colSpan={5} className={cell}>
                      <JsonDiff before={e.before} after={e.after} />
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
