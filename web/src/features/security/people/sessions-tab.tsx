import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { api, seg } from '../../../lib/api.ts';
import { useCanWrite } from '../../../lib/session.ts';
import { toast } from '../../../lib/toast.ts';
import { usePeopleWrite, useSessions } from './api.ts';

const when = (iso: string | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** Sessions, newest first (of one user when `userId` is given), each revocable by its objectId. */
export function SessionsTable({ appId, userId }: { appId: string; userId?: string }) {
  const canWrite = useCanWrite();
  const sessions = useSessions(appId, userId);
  const revoke = usePeopleWrite(appId, (base, objectId: string) =>
    api.delete(`${base}/sessions/${seg(objectId)}`),
  );
  return (
    <QueryState query={sessions} loading="Loading sessions…" failed="Could not load the sessions">
      {({ results, count }) => {
        return (
          <div className="space-y-1">
            <p className="text-sm text-slate-500" data-testid="sessions-count">
              {count} {count === 1 ? 'session' : 'sessions'}
              {count > results.length && ` (the newest ${results.length} shown)`}
            </p>
            {results.length > 0 && (
              <table className="w-full text-left text-sm">
                <thead className="text-slate-500">
                  <tr>
                    {!userId && <th className="py-1">User</th>}
                    <th className="py-1">Session</th>
                    <th>Created</th>
                    <th>Expires</th>
                    <th>Installation</th>
                    <th>Restricted</th>
                    <th>Created with</th>
                    {canWrite && <th />}
                  </tr>
                </thead>
                <tbody>
                  {results.map((s) => (
                    <tr
                      key={s.objectId}
                      data-testid="session-row"
                      data-session={s.objectId}
                      className="border-t border-slate-100 dark:border-slate-800"
                    >
                      {!userId && <td className="py-1">{s.user?.username ?? s.user?.objectId ?? '—'}</td>}
                      <td className="py-1 font-mono text-xs">{s.objectId}</td>
                      <td>{when(s.createdAt)}</td>
                      <td>{when(s.expiresAt?.iso)}</td>
                      <td className="font-mono text-xs">{s.installationId ?? '—'}</td>
                      <td>{s.restricted ? 'yes' : 'no'}</td>
                      <td>
                        {[s.createdWith?.action, s.createdWith?.authProvider].filter(Boolean).join(' · ') ||
                          '—'}
                      </td>
                      {canWrite && (
                        <td className="text-right">
                          <Button
                            size="sm"
                            variant="danger"
                            aria-label={`Revoke session ${s.objectId}`}
                            disabled={revoke.isPending}
                            onClick={() =>
                              revoke.mutate(s.objectId, {
                                onSuccess: () => toast.success('Session revoked'),
                                onError: (err) => toast.error(err, 'Could not revoke the session'),
                              })
                            }
                          >
                            Revoke
                          </Button>
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        );
      }}
    </QueryState>
  );
}

/** Every session of the app. Tokens never reach the console; a session is named by its objectId. */
export function SessionsTab({ appId }: { appId: string }) {
  return <SessionsTable appId={appId} />;
}
