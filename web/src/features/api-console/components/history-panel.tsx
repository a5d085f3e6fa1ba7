import { Button } from '../../../components/ui/button.tsx';
import { type ApiCall, asLabel } from '../lib/call.ts';
import type { HistoryEntry } from '../lib/history.ts';

/** The calls sent from this browser, newest first: load one into the form or send it again. */
export function HistoryPanel({
  entries,
  canRun,
  onLoad,
  onRerun,
  onClear,
}: {
  entries: HistoryEntry[];
  canRun: (call: ApiCall) => boolean;
  onLoad: (call: ApiCall) => void;
  onRerun: (call: ApiCall) => void;
  onClear: () => void;
}) {
  return (
    <aside aria-label="History" className="space-y-2">
      <div className="flex items-center justify-between">
        <h2 className="text-sm font-semibold">History</h2>
        <Button size="sm" variant="ghost" disabled={entries.length === 0} onClick={onClear}>
          Clear history
        </Button>
      </div>
      {entries.length === 0 ? (
        <p className="text-xs text-slate-500">
          Calls you send are kept in this browser (never a key or token).
        </p>
      ) : (
        <ul className="space-y-1">
          {entries.map((e) => (
            <li
              key={e.id}
              data-testid="history-entry"
              className="rounded border border-slate-200 p-2 text-xs dark:border-slate-700"
            >
              <p className="truncate font-mono" title={`${e.call.method} ${e.call.path}`}>
                <strong>{e.call.method}</strong> {e.call.path}
              </p>
              <p className="text-slate-500">
                as {asLabel(e.call.as)} · {new Date(e.at).toLocaleTimeString()}
              </p>
              <div className="mt-1 flex gap-1">
                <Button size="sm" onClick={() => onLoad(e.call)}>
                  Load
                </Button>
                <Button size="sm" disabled={!canRun(e.call)} onClick={() => onRerun(e.call)}>
                  Re-run
                </Button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </aside>
  );
}
