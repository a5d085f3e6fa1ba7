import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { useRequestLines } from '../api/logs.ts';
import { lineText, timeText } from '../lib/filters.ts';

const KIND_LABEL = {
  request: 'request',
  cloud: 'cloud code',
  webhook: 'webhook',
  realtime: 'realtime',
} as const;

const levelTone = (level: string | undefined) =>
  level === 'error'
    ? 'text-red-700 dark:text-red-300'
    : level === 'warn'
      ? 'text-amber-700 dark:text-amber-300'
      : 'text-slate-700 dark:text-slate-200';

/** Every line of one request, oldest first: its request line, cloud code, webhooks, realtime deliveries. */
export function RequestLines({
  appId,
  requestId,
  onClose,
}: {
  appId: string;
  requestId: string;
  onClose(): void;
}) {
  const lines = useRequestLines(appId, requestId);
  return (
    <section
      className="mt-6 rounded-md border border-slate-200 p-4 dark:border-slate-700"
      aria-label={`Lines of request ${requestId}`}
      data-testid="request-lines"
    >
      <div className="mb-3 flex items-center justify-between gap-4">
        <h2 className="text-sm font-semibold">
          Request <code className="font-mono">{requestId}</code>
        </h2>
        <Button size="sm" onClick={onClose}>
          Close
        </Button>
      </div>
      <QueryState
        query={lines}
        inline
        loading="Loading the request's lines…"
        failed="Could not load the request's lines"
        isEmpty={(a) => a.lines.length === 0}
        empty={
          <p className="text-sm text-slate-500" data-testid="request-lines-empty">
            No line of this request is kept (the service keeps its last lines only).
          </p>
        }
      >
        {(a) => (
          <ol className="space-y-1 font-mono text-xs">
            {a.lines.map((line) => (
              <li key={line.id} data-testid="request-line" data-kind={line.kind} className="flex gap-3">
                <span className="shrink-0 text-slate-500">{timeText(line.at)}</span>
                <span className="w-20 shrink-0 text-slate-500">{KIND_LABEL[line.kind]}</span>
                <span className={`break-all ${levelTone(line.level)}`} data-testid="request-line-text">
                  {lineText(line)}
                </span>
              </li>
            ))}
          </ol>
        )}
      </QueryState>
    </section>
  );
}
