/**
 * The History tab of the row panel: the row's versions, newest first, each with its change (op),
 * time, who made it, from where, and its field changes (old → new). A writer reverts the row to a
 * version, or restores the row when its last version is a delete; both show what will change
 * and ask first. Read-only console users see the history without those controls.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { errorText } from '../../../lib/api.ts';
import { toast } from '../../../lib/toast.ts';
import { historyApi, useRowVersions, type Version } from '../api/history.ts';
import { dataBrowserKeys } from '../api/query-keys.ts';
import { callerText, type FieldChange, fieldChanges, revertFields, valueText } from '../lib/versions.ts';

export const READ_ONLY_HISTORY = 'Read-only console users cannot revert or restore rows.';

/** A version's time as the console shows times: local, ISO on hover. */
export function VersionTime({ time }: { time: string }) {
  return (
    <time dateTime={time} title={time}>
      {new Date(time).toLocaleString()}
    </time>
  );
}

/** Field changes, one a line: `field: old → new`. */
export function FieldChanges({ changes, empty }: { changes: FieldChange[]; empty: string }) {
  if (changes.length === 0) return <p className="text-xs text-gray-500">{empty}</p>;
  return (
    <ul className="mt-1 space-y-0.5 font-mono text-xs" data-testid="field-changes">
      {changes.map((c) => (
        <li key={c.field} data-testid="field-change" data-field={c.field} className="break-all">
          <span className="font-semibold">{c.field}</span>: {valueText(c.before)} → {valueText(c.after)}
        </li>
      ))}
    </ul>
  );
}

type Pending = { kind: 'revert'; version: Version } | { kind: 'restore'; version: Version };

export function RowHistory({
  appId,
  className,
  objectId,
  canWrite,
  current,
  onChanged,
}: {
  appId: string;
  className: string;
  objectId: string;
  canWrite: boolean;
  /** The row as it is now (the panel read it), if it exists. */
  current: Record<string, unknown> | undefined;
  /** After a revert or a restore: the grid and the row are read anew. */
  onChanged(): void;
}) {
  const qc = useQueryClient();
  const q = useRowVersions(appId, className, objectId);
  const versions = q.data?.pages.flatMap((p) => p.results) ?? [];
  const latest = versions[0];
  const deleted = latest?.op === 'delete';
  const now = current ?? latest?.after ?? null;
  const [pending, setPending] = useState<Pending | null>(null);

  const write = useMutation({
    mutationFn: (p: Pending): Promise<unknown> =>
      p.kind === 'revert'
        ? historyApi.revert(appId, className, objectId, p.version.id)
        : historyApi.restore(appId, className, objectId),
    onSuccess: async (_answer, p) => {
      toast.success(
        p.kind === 'revert'
          ? `Reverted ${className} ${objectId} to the version of ${new Date(p.version.time).toLocaleString()}`
          : `Restored ${className} ${objectId}`,
      );
      setPending(null);
      onChanged();
      await Promise.all([
        qc.invalidateQueries({ queryKey: dataBrowserKeys.historyOf(appId, className) }),
        qc.invalidateQueries({ queryKey: dataBrowserKeys.row(appId, className, objectId) }),
      ]);
    },
    onError: (err, p) => {
      setPending(null);
      toast.error(err, p.kind === 'revert' ? 'Revert refused' : 'Restore refused');
    },
  });

  const preview =
    pending?.kind === 'revert'
      ? fieldChanges(now, revertFields(pending.version))
      : pending
        ? fieldChanges(null, pending.version.before)
        : [];

  return (
    <section className="mt-2" data-testid="row-history">
      {!canWrite && versions.length > 0 && (
        <p className="mb-2 text-xs text-gray-500" data-testid="history-read-only">
          {READ_ONLY_HISTORY}
        </p>
      )}
      {deleted && latest && (
        <div
          className="mb-2 rounded border border-amber-300 bg-amber-50 p-2 text-xs dark:border-amber-700 dark:bg-amber-950"
          data-testid="row-deleted"
        >
          <p>
            Deleted <VersionTime time={latest.time} /> by {callerText(latest.caller)}.
          </p>
          {canWrite && (
            <Button
              size="sm"
              className="mt-1"
              onClick={() => setPending({ kind: 'restore', version: latest })}
            >
              Restore
            </Button>
          )}
        </div>
      )}
      <QueryState
        query={q}
        loading="Loading the history…"
        failed="Could not load the history"
        errorText={errorText}
        inline
        isEmpty={() => versions.length === 0}
        empty={
          <p className="text-xs text-gray-500" data-testid="history-empty">
            No change of this row is recorded.
          </p>
        }
      >
        {() => (
          <ol className="space-y-2">
            {versions.map((v, i) => {
              const revertOf = v.revertOf ? versions.find((o) => o.id === v.revertOf) : undefined;
              // A version to go back to: not the current one, not while the row is deleted.
              const revertible = canWrite && !deleted && i > 0 && revertFields(v) !== null;
              return (
                <li
                  key={v.id}
                  className="rounded border p-1.5"
                  data-testid="history-version"
                  data-op={v.op}
                  data-version={v.id}
                >
                  <div className="flex flex-wrap items-baseline gap-x-2 text-xs">
                    <span className="font-semibold uppercase" data-testid="version-op">
                      {v.op}
                    </span>
                    <VersionTime time={v.time} />
                  </div>
                  <p className="text-xs text-gray-600 dark:text-gray-400">
                    by <span data-testid="version-who">{callerText(v.caller)}</span> via{' '}
                    <span data-testid="version-source">{v.source}</span>
                    {v.requestId && (
                      <>
                        {' · '}
                        <Link
                          to={`/apps/${encodeURIComponent(appId)}/logs?requestId=${encodeURIComponent(v.requestId)}`}
                          className="underline"
                          data-testid="version-request"
                        >
                          its request
                        </Link>
                      </>
                    )}
                  </p>
                  {revertOf && (
                    <p className="text-xs text-gray-600 dark:text-gray-400" data-testid="version-revert-of">
                      to the version of <VersionTime time={revertOf.time} />
                    </p>
                  )}
                  <FieldChanges
                    changes={v.op === 'delete' ? [] : fieldChanges(v.before, v.after)}
                    empty={v.op === 'delete' ? 'The row was deleted.' : 'No field changed.'}
                  />
                  {revertible && (
                    <Button
                      size="sm"
                      className="mt-1"
                      onClick={() => setPending({ kind: 'revert', version: v })}
                    >
                      Revert to this version
                    </Button>
                  )}
                </li>
              );
            })}
          </ol>
        )}
      </QueryState>
      {q.hasNextPage && (
        <Button
          size="sm"
          className="mt-2"
          onClick={() => void q.fetchNextPage()}
          disabled={q.isFetchingNextPage}
        >
          {q.isFetchingNextPage ? 'Loading…' : 'Load older versions'}
        </Button>
      )}
      <Dialog
        open={pending !== null}
        title={pending?.kind === 'restore' ? 'Restore this row?' : 'Revert to this version?'}
        onClose={() => setPending(null)}
        footer={
          <>
            <Button onClick={() => setPending(null)}>Cancel</Button>
            <Button
              variant="primary"
              disabled={write.isPending}
              onClick={() => pending && write.mutate(pending)}
            >
              {pending?.kind === 'restore' ? 'Restore row' : 'Revert row'}
            </Button>
          </>
        }
      >
        {pending && (
          <div className="text-sm" data-testid="history-preview">
            <p>
              {pending.kind === 'restore'
                ? `${className} ${objectId} comes back with the fields it had when it was deleted:`
                : `${className} ${objectId} gets the fields it had after the ${pending.version.op} of `}
              {pending.kind === 'revert' && (
                <>
                  <VersionTime time={pending.version.time} />:
                </>
              )}
            </p>
            <FieldChanges changes={preview} empty="No field would change." />
          </div>
        )}
      </Dialog>
    </section>
  );
}
