import { Button } from '../../../components/ui/button.tsx';
import type { AutoIndexReport } from '../api/performance.ts';
import { keysText, msText } from '../lib/report.ts';

const cell = 'px-3 py-2 align-top';

function At({ iso }: { iso?: string }) {
  if (!iso) return <span className="text-slate-400">—</span>;
  return (
    <time dateTime={iso} title={iso}>
      {new Date(iso).toLocaleString()}
    </time>
  );
}

/** The mean time of the shape's finds before the index and since, as the service measured them. */
function Effect({ index }: { index: AutoIndexReport }) {
  const { effect } = index;
  if (!effect) return <span className="text-slate-400">not measured</span>;
  const finds = (n: number) => `${n} ${n === 1 ? 'find' : 'finds'}`;
  return (
    <span className="block text-xs" data-testid="index-effect">
      <span className="block">
        Before: {msText(effect.beforeMs)} mean of {finds(effect.beforeCount)}
      </span>
      <span className="block">
        {effect.afterMs === undefined
          ? 'Since: no find yet'
          : `Since: ${msText(effect.afterMs)} mean of ${finds(effect.afterCount)}`}
      </span>
    </span>
  );
}

export interface IndexesTableProps {
  className: string;
  indexes: AutoIndexReport[];
  canWrite: boolean;
  onDrop(index: AutoIndexReport): void;
}

/** A class's automatic indexes: keys, how each came, when it was built, its measured effect. */
export function IndexesTable({ className, indexes, canWrite, onDrop }: IndexesTableProps) {
  return (
    <div className="overflow-x-auto rounded-md border border-slate-200 dark:border-slate-700">
      <table className="w-full text-left text-sm" aria-label={`Automatic indexes of ${className}`}>
        <thead className="bg-slate-50 text-xs text-slate-500 uppercase dark:bg-slate-800 dark:text-slate-400">
          <tr>
            <th className={cell}>Index</th>
            <th className={cell}>Keys</th>
            <th className={cell}>Built</th>
            <th className={cell}>Effect</th>
            <th className={cell}>Last used</th>
            {canWrite && <th className={cell} />}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-200 dark:divide-slate-700">
          {indexes.map((i) => (
            <tr key={i.name} data-testid="index-row" data-index={i.name}>
              <td className={cell}>
                <code className="font-mono text-xs break-all">{i.name}</code>
              </td>
              <td className={cell}>
                <code className="font-mono text-xs">{keysText(i.keys)}</code>
              </td>
              <td className={cell}>
                <span className="block" data-testid="index-origin">
                  {i.origin === 'automatic' ? 'By the service' : 'On request'}
                </span>
                <span className="block text-xs text-slate-500 dark:text-slate-400">
                  <At iso={i.builtAt} />
                  {i.buildMs !== undefined && `, in ${msText(i.buildMs)}`}
                </span>
              </td>
              <td className={cell}>
                <Effect index={i} />
              </td>
              <td className={`${cell} text-xs`}>
                <At iso={i.lastUsedAt} />
              </td>
              {canWrite && (
                <td className={`${cell} text-right`}>
                  <Button size="sm" variant="danger" onClick={() => onDrop(i)}>
                    Drop
                  </Button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
