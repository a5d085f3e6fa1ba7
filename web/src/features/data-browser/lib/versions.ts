/**
 * How the row history reads: a version's changes field by field, who made it, and the fields a
 * revert or a restore would write.
 */
import { diffJson, preview } from '../../../lib/json-diff.ts';
import { isPlainObject } from '../../../lib/wire.ts';
import type { Version, VersionCaller } from '../api/history.ts';

/** Kept by the service on every write: not a change anyone made. */
const BOOKKEEPING = new Set(['objectId', 'createdAt', 'updatedAt']);

export interface FieldChange {
  field: string;
  /** `undefined`: the field was not set. */
  before: unknown;
  after: unknown;
}

/** The fields whose values differ between two rows (either may be null), by field name. */
export function fieldChanges(
  before: Record<string, unknown> | null | undefined,
  after: Record<string, unknown> | null | undefined,
): FieldChange[] {
  const b = before ?? {};
  const a = after ?? {};
  return [...new Set([...Object.keys(b), ...Object.keys(a)])]
    .filter((f) => !BOOKKEEPING.has(f))
    .filter((f) => (Object.hasOwn(b, f) !== Object.hasOwn(a, f) ? true : diffJson(b[f], a[f]).length > 0))
    .sort()
    .map((field) => ({
      field,
      before: Object.hasOwn(b, field) ? b[field] : undefined,
      after: Object.hasOwn(a, field) ? a[field] : undefined,
    }));
}

/** A field's value in one line: dates and pointers by what they name, the rest as JSON. */
export function valueText(value: unknown): string {
  if (value === undefined) return '(not set)';
  if (isPlainObject(value)) {
    if (value.__type === 'Date' && typeof value.iso === 'string') return value.iso;
    if (value.__type === 'Pointer') return `${String(value.className)}/${String(value.objectId)}`;
  }
  return preview(value, 80);
}

/** Who made a version: the caller's kind and, when known, its name (or user id). */
export function callerText(caller: VersionCaller): string {
  const name = caller.name ?? caller.userId;
  return name ? `${caller.kind} · ${name}` : caller.kind;
}

/** The fields a revert to `version` gives the row: its `after`, or for a delete, its `before`. */
export const revertFields = (version: Version): Record<string, unknown> | null =>
  version.op === 'delete' ? version.before : version.after;
