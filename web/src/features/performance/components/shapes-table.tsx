import { Button } from '../../../components/ui/button.tsx';
import type { ShapeReport } from '../api/performance.ts';
import { keysText, msText } from '../lib/report.ts';

const cell = 'px-3 py-2 align-top';

/** What a shape compares: equal fields, a range, a sort (each only when it has some). */
function ShapeFields({ shape }: { shape: ShapeReport }) {
  const parts: Array<[string, string]> = [];
  if (shape.equality.length) parts.push(['equal', shape.equality.join(', ')]);
  if (shape.range.length) parts.push(['range', shape.range.join(', ')]);
  if (shape.sort.length) parts.push(['sort', keysText(shape.sort)]);
  return (
    <span className="flex flex-wrap gap-x-3 gap-y-1" title={shape.shape}>
      {parts.map(([label, fields]) => (
        <span key={label}>
          <span className="text-xs text-slate-500 dark:text-slate-400">{label} </span>
          <code className="font-mono text-xs">{fields}</code>
        </span>
      ))}
    </span>
  );
}

/** The index that serves a shape, or that it scans with why the service has not built one yet. */
function ServedBy({ shape }: { shape: ShapeReport }) {
  if (shape.index !== null)
    return (
      <code className="font-mono text-xs break-all" data-testid="shape-index">
        {shape.index}
      </code>
    );
  return (
    <span data-testid="shape-index">
      <span className="font-medium text-amber-700 dark:text-amber-300">Scans every row</span>
      {shape.waiting && (
        <span className="block text-xs text-slate-500 dark:text-slate-400">
          Not built automatically yet: {shape.waiting}
        </span>
      )}
    </span>
  );
}

export interface ShapesTableProps {
  className: string;
  shapes: ShapeReport[];
  canWrite: boolean;
  /** The shape whose index is being built, if any. */
  building?: string;
  onBuild(shape: ShapeReport): void;
}

/** A class's query shapes: how often and how long, and the index serving each (or a build button). */
export function ShapesTable({ className, shapes, canWrite, building, onBuild }: ShapesTableProps) {
  return (
    <div className="overflow-x-auto rounded-md border border-slate-200 dark:border-slate-700">
      <table className="w-full text-left text-sm" aria-label={`Query shapes of ${className}`}>
        <thead className="bg-slate-50 text-xs text-slate-500 uppercase dark:bg-slate-800 dark:text-slate-400">
          <tr>
            <th className={cell}>Query</th>
            <th className={`${cell} text-right`}>Finds</th>
            <th className={`${cell} text-right`}>Mean</th>
            <th className={`${cell} text-right`}>Slowest</th>
            <th className={`${cell} text-right`}>Total</th>
            <th className={cell}>Index</th>
            {canWrite && <th className={cell} />}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-200 dark:divide-slate-700">
          {shapes.map((s) => (
            <tr key={s.shape} data-testid="shape-row" data-shape={s.shape}>
              <td className={cell}>
                <ShapeFields shape={s} />
              </td>
              <td className={`${cell} text-right tabular-nums`} data-testid="shape-count">
                {s.count}
              </td>
              <td className={`${cell} text-right tabular-nums`}>{msText(s.meanMs)}</td>
              <td className={`${cell} text-right tabular-nums`}>{msText(s.maxMs)}</td>
              <td className={`${cell} text-right tabular-nums`}>{msText(s.totalMs)}</td>
              <td className={cell}>
                <ServedBy shape={s} />
              </td>
              {canWrite && (
                <td className={`${cell} text-right`}>
                  {s.index === null && (
                    <Button
                      size="sm"
                      variant="primary"
                      disabled={building !== undefined}
                      onClick={() => onBuild(s)}
                    >
                      {building === s.shape ? 'Building…' : 'Build index'}
                    </Button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
