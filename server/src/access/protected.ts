import type { Auth } from '../data/auth.ts';
import type { ClassSchema } from '../schema/types.ts';
import type { Row } from '../storage/adapter.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

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

export interface ProtectedView {
  /** Fields hidden from this caller on this row. */
  hidden(row: Row): string[];
  /**
   * Fields the caller may not use in `where` or `order`: every field hidden on at least one
   * possible row (the intersection of the groups that match the caller without looking at the
   * row, or all userField lists when none does). Querying on them would reveal their values.
   */
  unqueryable: ReadonlySet<string>;
}

/**
 * protectedFields layer. Groups matching a caller: `*`; `authenticated` with a session; the user's
 * id; `role:<Name>` for each held role; `userField:<f>` when the row's `f` points at the caller.
 * The hidden set is the intersection of the matching groups' lists; no matching group hides
 * nothing. Master sees everything. On `_User`, `ownerExempt` shows the owner its whole row.
 */
export function protectedView(
  schema: Pick<ClassSchema, 'className' | 'classLevelPermissions'>,
  auth: Auth,
  options: { ownerExempt: boolean },
): ProtectedView {
  if (auth.isMaster) return { hidden: () => [], unqueryable: new Set() };
  const raw = schema.classLevelPermissions?.protectedFields;
  const groups = isObject(raw) ? raw : {};
  const userId = auth.user?.objectId;
  const roles = new Set(auth.roles ?? []);
  const staticLists: string[][] = [];
  const userFieldLists: Array<[string, string[]]> = [];
  for (const [pattern, value] of Object.entries(groups)) {
    const list = Array.isArray(value) ? value.filter((f): f is string => typeof f === 'string') : [];
    if (pattern.startsWith('userField:')) {
      if (userId) userFieldLists.push([pattern.slice('userField:'.length), list]);
      continue;
    }
    const matches =
      pattern === '*' ||
      (pattern === 'authenticated' && userId !== undefined) ||
      (pattern.startsWith('role:') && roles.has(pattern.slice(5))) ||
      (userId !== undefined && pattern === userId);
    if (matches) staticLists.push(list);
  }
  const ownerExempt = options.ownerExempt && schema.className === '_User';
  const unqueryable = new Set<string>(
    staticLists.length > 0 ? intersect(staticLists) : userFieldLists.flatMap(([, list]) => list),
  );
  for (const f of ALWAYS_UNQUERYABLE[schema.className] ?? []) unqueryable.add(f);
  return {
    unqueryable,
    hidden(row: Row): string[] {
      if (ownerExempt && userId !== undefined && row.objectId === userId) return [];
      const lists = [...staticLists];
      for (const [field, list] of userFieldLists) if (pointsAt(row[field], userId!)) lists.push(list);
      return intersect(lists);
    },
  };
}
