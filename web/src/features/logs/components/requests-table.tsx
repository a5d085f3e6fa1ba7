import type { LogLine } from '../api/logs.ts';
import { timeText } from '../lib/filters.ts';

const cell = 'px-3 py-2 align-top whitespace-nowrap';

const statusTone = (status: number | undefined) =>
  status === undefined || status < 400
    ? 'text-emerald-700 dark:text-emerald-300'
    : status < 500
      ? 'text-amber-700 dark:text-amber-300'
      : 'text-red-700 dark:text-red-300';

export interface RequestsTableProps {
  lines: LogLine[];
  selected: string | undefined;
  onSelect(requestId: string): void;
}

/** Request lines, newest first; a click opens a request's lines. */
export function RequestsTable({ lines, selected, onSelect }: RequestsTableProps) {
  return (
    <div className="overflow-x-auto rounded-md border border-slate-200 dark:border-slate-700">
      <table className="w-full text-left text-sm" aria-label="Requests">
        <thead className="bg-slate-50 text-xs text-slate-500 uppercase dark:bg-slate-800 dark:text-slate-400">
          <tr>
            <th className={cell}>Time</th>
            <th className={cell}>Method</th>
            <th className={cell}>Path</th>
            <th className={cell}>Status</th>
            <th className={cell}>Code</th>
            <th className={cell}>ms</th>
            <th className={cell}>Caller</th>
            <th className={cell}>User</th>
            <th className={cell}>Request id</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((line) => (
            <tr
              key={line.id}
              data-testid="log-row"
              data-request-id={line.requestId}
              aria-selected={selected === line.requestId}
              className={`cursor-pointer border-t border-slate-100 hover:bg-slate-50 dark:border-slate-800 dark:hover:bg-slate-800/60 ${
                selected === line.requestId ? 'bg-indigo-50 dark:bg-indigo-950/40' : ''
              }`}
              onClick={() => onSelect(line.requestId)}
            >
              <td className={`${cell} font-mono text-xs`}>{timeText(line.at)}</td>
              <td className={cell}>{line.method}</td>
              <td className={`${cell} font-mono text-xs`}>
                <button
                  type="button"
                  className="text-left text-indigo-700 hover:underline dark:text-indigo-300"
                  onClick={(e) => {
                    e.stopPropagation();
                    onSelect(line.requestId);
                  }}
                >
                  {line.path}
                </button>
              </td>
              <td className={`${cell} font-medium ${statusTone(line.status)}`}>{line.status}</td>
              <td className={cell}>{line.code ?? ''}</td>
              <td className={cell}>{line.ms}</td>
              <td className={cell}>{line.caller ?? ''}</td>
              <td className={`${cell} font-mono text-xs`}>{line.user ?? ''}</td>
              <td className={`${cell} font-mono text-xs`}>{line.requestId}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
