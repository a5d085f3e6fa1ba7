import { useEffect } from 'react';
import { errorText } from '../lib/api.ts';
import {
  type AccessShift,
  type ClassShift,
  type Impact,
  type ImpactDraft,
  type PermissionChange,
  type Shift,
  type UserSample,
  useImpact,
} from '../lib/security-api.ts';
import { QueryState } from './query-state.tsx';
import { Button } from './ui/button.tsx';

export interface ImpactPreviewProps {
  appId: string;
  /** The class the draft changes (the preview is titled with it); absent for a draft of role changes only. */
  className?: string;
  /** One change of `className`: the draft `{ className, changes: [change] }`. */
  change?: PermissionChange;
  /** The whole draft (POST /security/impact, docs/security-api.md); `className` is taken from it. */
  draft?: ImpactDraft;
  onConfirm: () => void;
  onCancel: () => void;
  /** The confirm button's text ("Save" by default). */
  confirmLabel?: string;
  /** True while the caller saves: the confirm button waits. */
  busy?: boolean;
  /**
   * Called when the service refuses the draft itself (the change would be refused as it is, e.g.
   * a role cycle): the caller may show the refusal where the change was asked for.
   */
  onRefused?: (error: unknown) => void;
}

const names = (sample: UserSample[]) => sample.map((u) => u.username ?? u.objectId).join(', ');
const users = (n: number) => `${n} ${n === 1 ? 'user' : 'users'}`;

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

const anonymousWords: Record<Shift, string> = {
  gains: 'gain',
  loses: 'lose',
  both: 'gain and lose',
  same: 'keep the same',
};

/** "3 users gain it (ann, bob, …)". */
function Who({ count, sample, verb }: { count: number; sample: UserSample[]; verb: 'gain' | 'lose' }) {
  return (
    <span className={verb === 'gain' ? 'text-emerald-700' : 'text-red-700'}>
      {users(count)} {verb === 'gain' ? (count === 1 ? 'gains' : 'gain') : count === 1 ? 'loses' : 'lose'} it
      {sample.length > 0 && ` (${names(sample)}${count > sample.length ? ', …' : ''})`}
    </span>
  );
}

/** Each operation that changes for someone: who gains it, who loses it, and anonymous callers. */
function Operations({ shift }: { shift: ClassShift }) {
  if (!shift.operations) return null;
  const changed = shift.operations.filter((o) => o.gain > 0 || o.lose > 0 || o.anonymous !== 'same');
  if (changed.length === 0)
    return (
      <p className="text-slate-500" data-testid="impact-operations-none">
        No operation changes for any user or for anonymous callers.
      </p>
    );
  return (
    <ul className="space-y-1" data-testid="impact-operations">
      {changed.map((o) => {
        const parts = [
          o.gain > 0 && <Who key="gain" count={o.gain} sample={o.gainSample} verb="gain" />,
          o.lose > 0 && <Who key="lose" count={o.lose} sample={o.loseSample} verb="lose" />,
          o.anonymous !== 'same' && (
            <span key="anonymous" className={o.anonymous === 'gains' ? 'text-emerald-700' : 'text-red-700'}>
              anonymous callers {anonymousWords[o.anonymous]} it
            </span>
          ),
        ].filter(Boolean);
        return (
          <li
            key={o.operation}
            data-operation={o.operation}
            data-gain={o.gain}
            data-lose={o.lose}
            data-anonymous={o.anonymous}
          >
            <code className="font-mono">{o.operation}</code>:{' '}
            {parts.flatMap((p, i) => (i === 0 ? [p] : ['; ', p]))}
          </li>
        );
      })}
    </ul>
  );
}

function Fields({ shift }: { shift: ClassShift }) {
  const changed = shift.fields.filter(
    (f) => f.hiddenFrom > 0 || f.visibleTo > 0 || (f.anonymous !== undefined && f.anonymous !== 'same'),
  );
  if (changed.length === 0) return null;
  const forUsers = changed.filter((f) => f.hiddenFrom > 0 || f.visibleTo > 0);
  return (
    <div>
      <p className="font-medium">Field visibility</p>
      <ul className="space-y-1" data-testid="impact-fields">
        {forUsers.map((f) => (
          <li
            key={f.field}
            data-field={f.field}
            data-hidden-from={f.hiddenFrom}
            data-visible-to={f.visibleTo}
            data-anonymous={f.anonymous ?? 'same'}
          >
            <code className="font-mono">{f.field}</code>:{' '}
            {f.hiddenFrom > 0 && (
              <span className="text-red-700">
                becomes hidden from {users(f.hiddenFrom)}
                {f.hiddenFromSample?.length ? ` (${names(f.hiddenFromSample)})` : ''}
              </span>
            )}
            {f.hiddenFrom > 0 && f.visibleTo > 0 && '; '}
            {f.visibleTo > 0 && (
              <span className="text-emerald-700">
                becomes visible to {users(f.visibleTo)}
                {f.visibleToSample?.length ? ` (${names(f.visibleToSample)})` : ''}
              </span>
            )}
          </li>
        ))}
      </ul>
      {(['loses', 'gains'] as const).map((shift) => {
        const list = changed.filter((f) => f.anonymous === shift || f.anonymous === 'both');
        return list.length === 0 ? null : (
          <p key={shift} data-testid={`impact-fields-anonymous-${shift}`}>
            Anonymous callers {shift === 'loses' ? 'stop seeing' : 'start seeing'}{' '}
            {list.map((f) => f.field).join(', ')}.
          </p>
        );
      })}
    </div>
  );
}

/**
 * The answer of POST /security/impact in words (no buttons): read and write access, then each
 * operation that changes (every layer: CLP, ACL, protectedFields), then field visibility; for a
 * draft that changes roles without naming a class, one section per class where something changes.
 */
export function ImpactSummary({
  impact,
  rolesOnly = false,
  everyClass = false,
}: {
  impact: Impact;
  /** The draft changes roles only: only the users whose roles change were asked about. */
  rolesOnly?: boolean;
  /** The draft names no class: every class was compared. */
  everyClass?: boolean;
}) {
  const { users: u } = impact;
  return (
    <div className="space-y-3 text-sm" data-testid="impact-summary">
      <p data-testid="impact-users">
        {rolesOnly
          ? `Computed for the ${users(u.considered)} whose roles change${u.sampled ? ' (a uniform sample)' : ''}, of ${users(u.total)}`
          : u.sampled
            ? `Estimated from a uniform sample of ${u.considered} of ${u.total} users`
            : `Computed for all ${u.total} ${u.total === 1 ? 'user' : 'users'}`}
        {u.sampled && u.bound !== null && (
          <span data-testid="impact-bound"> (counts are scaled; 95% margin ±{u.bound})</span>
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
      {everyClass && impact.classes?.length ? (
        impact.classes.map((c) => (
          <section
            key={c.className}
            className="space-y-1"
            data-testid="impact-class"
            data-class={c.className}
            aria-label={`Impact on ${c.className}`}
          >
            <p className="font-medium">On {c.className}</p>
            <Operations shift={c} />
            <Fields shift={c} />
          </section>
        ))
      ) : everyClass ? (
        <p className="text-slate-500" data-testid="impact-operations-none">
          No operation of any class changes for anyone.
        </p>
      ) : (
        <>
          <Operations shift={impact} />
          <Fields shift={impact} />
        </>
      )}
    </div>
  );
}

/**
 * What a permission draft would do (who gains or loses each operation, which fields become
 * visible or hidden), computed by the service from the deciders it enforces with; then Confirm or
 * Cancel.
 */
export function ImpactPreview({
  appId,
  className,
  change,
  draft,
  onConfirm,
  onCancel,
  confirmLabel = 'Save',
  busy = false,
  onRefused,
}: ImpactPreviewProps) {
  const asked: ImpactDraft = draft ?? { className, changes: change ? [change] : [] };
  const impact = useImpact(appId, asked);
  const refused = impact.isError ? impact.error : null;
  useEffect(() => {
    if (refused && onRefused) onRefused(refused);
  }, [refused, onRefused]);
  const target = asked.className ?? className;
  const rolesOnly = !asked.changes?.length;
  return (
    <section
      aria-label="Impact preview"
      data-testid="impact-preview"
      className="rounded-md border border-slate-200 p-3 dark:border-slate-700"
    >
      <h3 className="mb-2 text-sm font-semibold">
        {target ? `Impact of this change on ${target}` : 'Impact of this change'}
      </h3>
      <QueryState
        query={impact}
        loading="Computing the impact…"
        failed="Could not compute the impact"
        errorText={errorText}
        errorTestId="impact-error"
      >
        {(answer) => <ImpactSummary impact={answer} rolesOnly={rolesOnly} everyClass={!target} />}
      </QueryState>
      <div className="mt-3 flex justify-end gap-2">
        <Button onClick={onCancel}>Cancel</Button>
        <Button variant="primary" onClick={onConfirm} disabled={busy || impact.isPending}>
          {confirmLabel}
        </Button>
      </div>
    </section>
  );
}
