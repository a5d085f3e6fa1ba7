import { Button } from '../../../components/ui/button.tsx';
import { Spinner } from '../../../components/ui/spinner.tsx';
import { isApiError } from '../../../lib/api.ts';
import {
  type AccessShift,
  type Impact,
  type PermissionChange,
  type UserSample,
  useImpact,
} from '../api/security.ts';

export interface ImpactPreviewProps {
  appId: string;
  className: string;
  /** The `change` of POST /security/impact (docs/security-api.md). */
  change: PermissionChange;
  onConfirm: () => void;
  onCancel: () => void;
  /** The confirm button's text ("Save" by default). */
  confirmLabel?: string;
  /** True while the caller saves: the confirm button waits. */
  busy?: boolean;
}

const names = (sample: UserSample[]) => sample.map((u) => u.username ?? u.objectId).join(', ');

function ShiftLine({ verb, shift, what }: { verb: 'gain' | 'lose'; shift: AccessShift; what: string }) {
  const count = verb === 'gain' ? shift.gain : shift.lose;
  const sample = verb === 'gain' ? shift.gainSample : shift.loseSample;
  return (
    <li data-testid={`impact-${what}-${verb}`} data-count={count}>
      <span className={count > 0 ? (verb === 'gain' ? 'text-emerald-700' : 'text-red-700') : ''}>
        {count} {count === 1 ? `user ${verb}s` : `users ${verb}`} {what} access
      </span>
      {sample.length > 0 && (
        <span className="text-slate-500 dark:text-slate-400">
          {' '}
          ({names(sample)}
          {count > sample.length ? ', …' : ''})
        </span>
      )}
    </li>
  );
}

const anonymousWords: Record<Impact['anonymous']['read'], string> = {
  gains: 'gain',
  loses: 'lose',
  same: 'keep the same',
};

/** The answer of POST /security/impact in words (no buttons). */
export function ImpactSummary({ impact }: { impact: Impact }) {
  const { users } = impact;
  const changedFields = impact.fields.filter((f) => f.hiddenFrom > 0 || f.visibleTo > 0);
  return (
    <div className="space-y-3 text-sm" data-testid="impact-summary">
      <p data-testid="impact-users">
        {users.sampled
          ? `Estimated from a uniform sample of ${users.considered} of ${users.total} users`
          : `Computed for all ${users.total} ${users.total === 1 ? 'user' : 'users'}`}
        {users.sampled && users.bound !== null && (
          <span data-testid="impact-bound"> (counts are scaled; 95% margin ±{users.bound})</span>
        )}
        .
      </p>
      <ul className="space-y-1">
        <ShiftLine verb="gain" shift={impact.read} what="read" />
        <ShiftLine verb="lose" shift={impact.read} what="read" />
        <ShiftLine verb="gain" shift={impact.write} what="write" />
        <ShiftLine verb="lose" shift={impact.write} what="write" />
        <li data-testid="impact-anonymous">
          Anonymous callers (application keys only) {anonymousWords[impact.anonymous.read]} read access and{' '}
          {anonymousWords[impact.anonymous.write]} write access.
        </li>
      </ul>
      {changedFields.length > 0 && (
        <div>
          <p className="font-medium">Field visibility</p>
          <ul className="space-y-1" data-testid="impact-fields">
            {changedFields.map((f) => (
              <li
                key={f.field}
                data-field={f.field}
                data-hidden-from={f.hiddenFrom}
                data-visible-to={f.visibleTo}
              >
                <code className="font-mono">{f.field}</code>:{' '}
                {f.hiddenFrom > 0 && (
                  <span className="text-red-700">
                    becomes hidden from {f.hiddenFrom} {f.hiddenFrom === 1 ? 'user' : 'users'}
                    {f.hiddenFromSample?.length ? ` (${names(f.hiddenFromSample)})` : ''}
                  </span>
                )}
                {f.hiddenFrom > 0 && f.visibleTo > 0 && '; '}
                {f.visibleTo > 0 && (
                  <span className="text-emerald-700">
                    becomes visible to {f.visibleTo} {f.visibleTo === 1 ? 'user' : 'users'}
                    {f.visibleToSample?.length ? ` (${names(f.visibleToSample)})` : ''}
                  </span>
                )}
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

/**
 * What a proposed ACL, CLP or protectedFields change would do (who gains or loses read and write,
 * which fields become visible or hidden), computed by the service; then Confirm or Cancel.
 */
export function ImpactPreview({
  appId,
  className,
  change,
  onConfirm,
  onCancel,
  confirmLabel = 'Save',
  busy = false,
}: ImpactPreviewProps) {
  const impact = useImpact(appId, className, change);
  return (
    <section
      aria-label="Impact preview"
      data-testid="impact-preview"
      className="rounded-md border border-slate-200 p-3 dark:border-slate-700"
    >
      <h3 className="mb-2 text-sm font-semibold">Impact of this change on {className}</h3>
      {impact.isPending ? (
        <Spinner label="Computing the impact…" />
      ) : impact.isError ? (
        <p role="alert" className="text-sm text-red-600" data-testid="impact-error">
          Could not compute the impact:{' '}
          {isApiError(impact.error)
            ? `Error ${impact.error.code}: ${impact.error.error}`
            : impact.error.message}
        </p>
      ) : (
        <ImpactSummary impact={impact.data} />
      )}
      <div className="mt-3 flex justify-end gap-2">
        <Button onClick={onCancel}>Cancel</Button>
        <Button variant="primary" onClick={onConfirm} disabled={busy || impact.isPending}>
          {confirmLabel}
        </Button>
      </div>
    </section>
  );
}
