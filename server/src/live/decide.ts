/**
 * The decision of one event for one subscriber, as a pure function of the subscription as compiled,
 * the event, and the facts about the event that depend on the caller alone (CLP find for the class,
 * and whether the row's ACL grants read on each side of the change; event-cache.ts computes those
 * once per caller). docs/architecture/realtime.md "How one event is decided per subscriber" lists
 * the steps; this file is their one home.
 */
import type { Caller } from '../kernel/caller.ts';
import type { Row } from '../kernel/records.ts';
import type { RowMatcher } from '../query/match.ts';
import type { CompiledSubscription } from './model.ts';
import type { LiveEvent } from './retention.ts';
import type { DeliveredKind, FilterReason } from './trace.ts';

/** What a decision asks about the caller and the event, whatever the subscription. */
export interface EventFacts {
  /** CLP find for the event's class, with roles and requiresAuthentication. */
  findAllowed(caller: Caller): boolean;
  /** Whether the row's ACL on that side of the change grants the caller read. */
  readable(which: 'before' | 'after', caller: Caller): boolean;
}

export interface EventDecision {
  /** The event kind to send, or null when the subscriber receives nothing. */
  kind: DeliveredKind | null;
  /** Why it receives nothing (only when `kind` is null). */
  reason?: FilterReason;
  /** Whether the subscriber may read the row before the change (an `enter` then carries `original`). */
  beforeReadable: boolean;
  /** Whether the subscriber may read the row after the change (a `leave` then carries it). */
  afterReadable: boolean;
}

/** How one side of the change (the row before or after) stands for a subscriber: null when it matches. */
type SideVerdict = FilterReason | 'absent' | null;

/**
 * CLP find for the class (with roles and requiresAuthentication), then per side of the change (the
 * row before and after) the CLP row condition, the row's ACL and the where. Which sides match gives
 * the kind (docs/protocol.md#realtime-frames: before and after → update, after only → create or
 * enter, before only → leave, deleted → delete); a `watch` lets through only a change of a watched
 * field.
 */
export function decideEvent(
  compiled: CompiledSubscription,
  event: LiveEvent,
  facts: EventFacts,
): EventDecision {
  const { caller } = compiled;
  if (!facts.findAllowed(caller)) {
    return { kind: null, reason: 'clp', beforeReadable: false, afterReadable: false };
  }
  const before = sideVerdict(compiled, facts, event.before, 'before');
  const after = sideVerdict(compiled, facts, event.after, 'after');
  switch (event.op) {
    case 'create':
      if (after !== null) return decision(null, after, before, after);
      return watchedUnchanged(compiled, event)
        ? decision(null, 'kind', before, after)
        : decision('create', null, before, after);
    case 'delete':
      return before === null
        ? decision('delete', null, before, after)
        : decision(null, before, before, after);
    default: {
      if (before === null && after === null) {
        return watchedUnchanged(compiled, event)
          ? decision(null, 'kind', before, after)
          : decision('update', null, before, after);
      }
      if (after === null) return decision('enter', null, before, after);
      if (before === null) return decision('leave', null, before, after);
      return decision(null, after, before, after);
    }
  }
}

/**
 * Why a subscription whose where matches the row on neither side is filtered, as `decideEvent` says
 * it: CLP find, then for the row the event is about (after the change; before it for a delete) the
 * CLP row condition, the ACL, and the where.
 */
export function reasonOutside(
  facts: EventFacts,
  event: LiveEvent,
  caller: Caller,
  clpMatcher: RowMatcher | null,
): FilterReason {
  if (!facts.findAllowed(caller)) return 'clp';
  const which = event.op === 'delete' ? 'before' : 'after';
  const row = event[which];
  if (!row) return 'kind';
  if (clpMatcher && !clpMatcher(row)) return 'clp';
  if (!facts.readable(which, caller)) return 'acl';
  return 'where';
}

function sideVerdict(
  compiled: CompiledSubscription,
  facts: EventFacts,
  row: Row | null,
  which: 'before' | 'after',
): SideVerdict {
  if (!row) return 'absent';
  if (compiled.clpMatcher && !compiled.clpMatcher(row)) return 'clp';
  if (!facts.readable(which, compiled.caller)) return 'acl';
  if (!compiled.matcher(row)) return 'where';
  return null;
}

/** A side the subscriber may read: it matches, or only the where leaves it out. */
function readable(verdict: SideVerdict): boolean {
  return verdict === null || verdict === 'where';
}

/** A filtered decision says the reason of the side that failed; an absent side (or none) is the kind's. */
function decision(
  kind: DeliveredKind | null,
  reason: SideVerdict,
  before: SideVerdict,
  after: SideVerdict,
): EventDecision {
  if (kind !== null) return { kind, beforeReadable: readable(before), afterReadable: readable(after) };
  return {
    kind,
    reason: reason && reason !== 'absent' ? reason : 'kind',
    beforeReadable: readable(before),
    afterReadable: readable(after),
  };
}

/** A watch lets through only a change of a watched field; a new row "changes" the ones it holds. */
function watchedUnchanged(compiled: CompiledSubscription, event: LiveEvent): boolean {
  const watch = compiled.request.watch;
  return !!watch && !watch.some((field) => !sameValue(event.before?.[field], event.after?.[field]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return JSON.stringify(a) === JSON.stringify(b);
}
