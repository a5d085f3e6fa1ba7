import { QueryState } from '../../../components/query-state.tsx';
import { usePushStatus } from '../api/push.ts';

const COLORS: Record<string, string> = {
  pending: 'bg-slate-200 text-slate-800',
  scheduled: 'bg-sky-100 text-sky-800',
  running: 'bg-amber-100 text-amber-800',
  succeeded: 'bg-green-100 text-green-800',
  failed: 'bg-red-100 text-red-800',
};

const perType = (counts?: Record<string, number>) =>
  counts && Object.keys(counts).length
    ? Object.entries(counts)
        .map(([t, n]) => `${t} ${n}`)
        .join(', ')
    : '';

/** The pushes, newest first, with their status and counts; refreshed every second. */
export function StatusList({ appId }: { appId: string }) {
  const status = usePushStatus(appId);
  return (
    <QueryState
      query={status}
      loading="Loading pushes…"
      failed="Could not load the pushes"
      isEmpty={(pushes) => pushes.length === 0}
      empty={
        <p className="text-sm text-slate-500" data-testid="push-status-empty">
          No push sent yet.
        </p>
      }
    >
      {(pushes) => (
        <table className="w-full text-left text-sm">
          <thead className="text-slate-500">
            <tr>
              <th className="py-1">Created</th>
              <th>Message</th>
              <th>Status</th>
              <th>Sent</th>
              <th>Failed</th>
            </tr>
          </thead>
          <tbody>
            {pushes.map((p) => {
              let message = '';
              try {
                const data = JSON.parse(p.payload ?? '{}');
                message = String(data.title ?? data.alert ?? '');
              } catch {
                // an unreadable payload shows no message
              }
              return (
                <tr
                  key={p.objectId}
                  data-testid="push-status-row"
                  data-id={p.objectId}
                  className="border-t border-slate-100 align-top dark:border-slate-800"
                >
                  <td className="py-1">
                    <time dateTime={p.createdAt} title={p.createdAt}>
                      {new Date(p.createdAt).toLocaleString()}
                    </time>
                  </td>
                  <td>{message}</td>
                  <td>
                    <span
                      className={`rounded px-1.5 py-0.5 text-xs ${COLORS[p.status] ?? ''}`}
                      data-testid="push-status"
                    >
                      {p.status}
                    </span>
                    {p.errorMessage && <p className="text-xs text-red-600">{p.errorMessage}</p>}
                  </td>
                  <td className="tabular-nums" data-testid="push-sent">
                    {p.numSent ?? 0}
                    {perType(p.sentPerType) && (
                      <span className="block text-xs text-slate-500">{perType(p.sentPerType)}</span>
                    )}
                  </td>
                  <td className="tabular-nums" data-testid="push-failed">
                    {p.numFailed ?? 0}
                    {perType(p.failureReasons) && (
                      <span className="block text-xs text-slate-500">{perType(p.failureReasons)}</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </QueryState>
  );
}
