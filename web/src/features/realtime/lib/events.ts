import type { InspectorEvent, Row } from '../../../lib/live-stream.ts';

/** Keeps at most `cap` events (newest first); returns how many fell off. */
export function keepEvents(
  list: InspectorEvent[],
  incoming: InspectorEvent[],
  cap: number,
): { list: InspectorEvent[]; dropped: number } {
  const all = [...incoming.slice().reverse(), ...list];
  const max = Math.max(1, cap);
  return all.length > max
    ? { list: all.slice(0, max), dropped: all.length - max }
    : { list: all, dropped: 0 };
}

export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

const IGNORED = new Set(['updatedAt']);

/** Field-level diff of an update: the fields whose value differs between `original` and `object`. */
export function fieldDiff(original: Row | undefined, object: Row | undefined): FieldChange[] {
  const before = original ?? {};
  const after = object ?? {};
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  const out: FieldChange[] = [];
  for (const field of [...fields].sort()) {
    if (IGNORED.has(field)) continue;
    const a = before[field];
    const b = after[field];
    if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ field, before: a, after: b });
  }
  return out;
}

/** What each delivery-trace reason means, for the filtered events the inspector shows. */
export const REASONS: Record<string, string> = {
  where: 'the row does not match this inspector’s where',
  clp: 'the class-level permissions do not let this viewpoint find rows of the class',
  acl: 'the row’s ACL does not let this viewpoint read it',
  kind: 'this event kind is not delivered to the subscription',
  session: 'the subscription’s session ended',
  cloud: 'cloud code’s afterLiveQueryEvent kept it from this subscription',
};

export const KINDS = ['create', 'update', 'delete', 'enter', 'leave', 'filtered'] as const;
