import { isObject } from '@bds/client/protocol';
import type { Caller } from '../kernel/caller.ts';
import type { Row } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { allow, type Verdict } from './verdict.ts';

/** Fields no non-master caller may query on, whatever protectedFields says. */
const ALWAYS_UNQUERYABLE: Record<string, readonly string[]> = { _User: ['password', 'authData'] };

function pointsAt(value: unknown, userId: string): boolean {
  if (Array.isArray(value)) return value.some((v) => pointsAt(v, userId));
  return (
    isObject(value) &&
    (value.__type === 'Pointer' || value.__type === 'Object') &&
    value.className === '_User' &&
    value.objectId === userId
  );
}

function intersect(lists: readonly (readonly string[])[]): string[] {
  if (lists.length === 0) return [];
  const [first, ...rest] = lists;
  return [...new Set(first)].filter((f) => rest.every((l) => l.includes(f)));
}

/** A protectedFields group that applies to the caller, with its list. */
export interface MatchedGroup {
  pattern: string;
  fields: readonly string[];
}

export interface ProtectedView {
  /** The groups that apply to the caller on this row; `[]` when the owner exemption applies. */
  groups(row: Row): MatchedGroup[];
  /** Fields hidden from this caller on this row: the intersection of the matching groups' lists. */
  hidden(row: Row): string[];
  /**
   * Fields the caller may not use in `where` or `order`: every field hidden on at least one
   * possible row (the intersection of the groups that match the caller without looking at the
   * row, or all userField lists when none does). Querying on them would reveal their values.
   */
  unqueryable: ReadonlySet<string>;
  /**
   * What `hidden` answers for every row, when that does not depend on the row (no `userField:`
   * group, no owner exemption); `undefined` when it does.
   */
  fixedHidden?: readonly string[];
}

const NOTHING_HIDDEN: ProtectedView = Object.freeze({
  groups: () => [],
  hidden: () => [],
  unqueryable: new Set<string>(),
  fixedHidden: Object.freeze([]),
});

/**
 * protectedFields layer. Groups matching a caller: `*`; `authenticated` with a session; the user's
 * id; `role:<Name>` for each held role; `userField:<f>` when the row's `f` points at the caller.
 * The hidden set is the intersection of the matching groups' lists; no matching group hides
 * nothing. Master sees everything. On `_User`, `ownerExempt` shows the owner its whole row.
 */
export function protectedView(
  schema: Pick<ClassSchema, 'className' | 'classLevelPermissions'>,
  caller: Caller,
  options: { ownerExempt: boolean },
): ProtectedView {
  if (caller.isMaster) return NOTHING_HIDDEN;
  const raw = schema.classLevelPermissions?.protectedFields;
  const patterns = isObject(raw) ? raw : {};
  const userId = caller.user?.objectId;
  const roles = new Set(caller.roles);
  const staticGroups: MatchedGroup[] = [];
  const userFieldGroups: Array<[string, MatchedGroup]> = [];
  for (const [pattern, value] of Object.entries(patterns)) {
    const fields = Array.isArray(value) ? value.filter((f): f is string => typeof f === 'string') : [];
    if (pattern.startsWith('userField:')) {
      if (userId) userFieldGroups.push([pattern.slice('userField:'.length), { pattern, fields }]);
      continue;
    }
    const matches =
      pattern === '*' ||
      (pattern === 'authenticated' && userId !== undefined) ||
      (pattern.startsWith('role:') && roles.has(pattern.slice(5))) ||
      (userId !== undefined && pattern === userId);
    if (matches) staticGroups.push({ pattern, fields });
  }
  const ownerExempt = options.ownerExempt && schema.className === '_User';
  const unqueryable = new Set<string>(
    staticGroups.length > 0
      ? intersect(staticGroups.map((g) => g.fields))
      : userFieldGroups.flatMap(([, g]) => g.fields),
  );
  for (const f of ALWAYS_UNQUERYABLE[schema.className] ?? []) unqueryable.add(f);
  const groups = (row: Row): MatchedGroup[] => {
    if (ownerExempt && userId !== undefined && row.objectId === userId) return [];
    const out = [...staticGroups];
    for (const [field, group] of userFieldGroups) if (pointsAt(row[field], userId!)) out.push(group);
    return out;
  };
  const hidden = (row: Row) => intersect(groups(row).map((g) => g.fields));
  const fixed = userFieldGroups.length === 0 && !(ownerExempt && userId !== undefined);
  return {
    unqueryable,
    groups,
    hidden,
    fixedHidden: fixed ? Object.freeze(intersect(staticGroups.map((g) => g.fields))) : undefined,
  };
}

/** The protectedFields verdict on one row, for explanations: the groups that matched and what they hide. */
export function explainProtected(view: ProtectedView, row: Row): Verdict & { hidden: string[] } {
  const groups = view.groups(row);
  const hidden = intersect(groups.map((g) => g.fields));
  const reason =
    groups.length === 0
      ? 'no protectedFields group applies to the caller, so every field is visible'
      : `groups ${groups.map((g) => `${g.pattern} [${g.fields.join(', ')}]`).join(', ')} apply; ` +
        (hidden.length ? `their intersection hides ${hidden.join(', ')}` : 'their intersection is empty');
  return { ...allow('protectedFields', 'protectedFields.view', reason), hidden };
}
