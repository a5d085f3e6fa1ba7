import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { BdsError, ErrorCode, toBdsError } from '../kernel/errors.ts';
import { MATCH_ALL, type QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import type { HeldRole } from '../storage/adapter.ts';
import type { RoleChange } from './impact-draft.ts';

/**
 * Who the impact of a draft is asked for (security/impact.ts): the users whose roles the draft's
 * role changes may change, the roles they hold under the draft, and every user (or a uniform
 * sample) with the margin of a count scaled up from the sample.
 */

/** Rows read at once when listing a role's members. */
const PAGE = 100_000;

class RolledBack extends Error {}

// ---------------------------------------------------------------------------------------------
// Roles under the draft
// ---------------------------------------------------------------------------------------------

export async function checkRoleChanges(data: Data, changes: readonly RoleChange[]): Promise<void> {
  const { schemas } = data.core;
  const exists = async (className: string, id: string) => {
    const schema = schemas.get(className);
    const row = schema ? await data.reads.byId(schema, id) : undefined;
    if (!row) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, `No ${className} row has id ${id}.`);
  };
  for (const c of changes) {
    await exists('_Role', c.roleId);
    for (const id of [...c.users.add, ...c.users.remove]) await exists('_User', id);
    for (const id of [...c.roles.add, ...c.roles.remove]) await exists('_Role', id);
  }
}

/** Users whose roles the changes may change: the users added or removed, and the holders of the roles moved. */
export async function roleCandidates(data: Data, changes: readonly RoleChange[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const c of changes) for (const id of [...c.users.add, ...c.users.remove]) out.add(id);
  const moved = changes.flatMap((c) => [...c.roles.add, ...c.roles.remove]);
  for (const id of await holdersOf(data, moved)) out.add(id);
  return out;
}

/**
 * The users who hold any of these roles: their members, and the members of every role their
 * `roles` relations hold, transitively (a role held in role X's `roles` gives its users X).
 */
async function holdersOf(data: Data, roleIds: readonly string[]): Promise<Set<string>> {
  const users = new Set<string>();
  if (roleIds.length === 0) return users;
  const { store, schemas } = data.core;
  const roleSchema = schemas.get('_Role')!;
  const userSchema = schemas.get('_User')!;
  const related = (id: string, key: string): QueryNode => ({
    type: 'relatedTo',
    owner: { className: '_Role', objectId: id },
    key,
  });
  const seen = new Set(roleIds);
  let frontier = [...seen];
  while (frontier.length) {
    const next: string[] = [];
    for (const id of frontier) {
      const spec = (key: string) => ({ where: related(id, key), order: [], limit: PAGE, skip: 0 });
      for (const child of await store.find(roleSchema, spec('roles'), schemas.lookup)) {
        const childId = String(child.objectId);
        if (!seen.has(childId)) {
          seen.add(childId);
          next.push(childId);
        }
      }
      for (const user of await store.find(userSchema, spec('users'), schemas.lookup))
        users.add(String(user.objectId));
    }
    frontier = next;
  }
  return users;
}

/**
 * The roles each candidate holds once the role changes are made: the changes are written through
 * the write pipeline (its checks, a cycle among them, answer as the writes would) inside a
 * transaction that always rolls back, so nothing is kept and no event is published.
 */
export async function rolesUnderDraft(
  data: Data,
  changes: readonly RoleChange[],
  candidates: ReadonlySet<string>,
): Promise<Map<string, HeldRole[]>> {
  const ctx = { caller: MASTER, source: 'rest' as const, context: {} };
  const pointers = (className: string, ids: readonly string[]) =>
    ids.map((objectId) => ({ __type: 'Pointer', className, objectId }));
  let held = new Map<string, HeldRole[]>();
  try {
    await data.core.store.transaction(async () => {
      for (const c of changes) {
        for (const [key, target] of [
          ['users', '_User'],
          ['roles', '_Role'],
        ] as const) {
          for (const [op, ids] of [
            ['AddRelation', c[key].add],
            ['RemoveRelation', c[key].remove],
          ] as const) {
            if (ids.length === 0) continue;
            await data.writes.update(ctx, '_Role', c.roleId, {
              [key]: { __op: op, objects: pointers(target, ids) },
            });
          }
        }
      }
      // Holders of the roles moved, as the draft leaves them (a change below them may add some).
      const moved = changes.flatMap((c) => [...c.roles.add, ...c.roles.remove]);
      const users = new Set([...candidates, ...(await holdersOf(data, moved))]);
      held = new Map();
      for (const id of users) held.set(id, await data.core.store.rolesOf(id));
      throw new RolledBack();
    });
  } catch (err) {
    if (!(err instanceof RolledBack)) throw toBdsError(err);
  }
  return held;
}

// ---------------------------------------------------------------------------------------------
// Users and counts
// ---------------------------------------------------------------------------------------------

/**
 * The users explained: every user (or only `among`), up to the exact limit, else a uniform sample
 * of that many. `total` is every user; `population` is what a sample is scaled to.
 */
export async function impactUsers(
  data: Data,
  limit: number,
  among: readonly string[] | undefined,
): Promise<{ users: Row[]; total: number; population: number; sampled: boolean }> {
  const { store, schemas } = data.core;
  const schema = schemas.get('_User');
  if (!schema) return { users: [], total: 0, population: 0, sampled: false };
  const total = await store.count(schema, { where: MATCH_ALL }, schemas.lookup);
  const order = [{ path: ['objectId'], descending: false }];
  if (among !== undefined) {
    const ids = among.length > limit ? samplePositions(among.length, limit).map((i) => among[i]!) : among;
    const users: Row[] = [];
    for (let i = 0; i < ids.length; i += 1000) {
      const where: QueryNode = { type: 'in', path: ['objectId'], values: ids.slice(i, i + 1000), not: false };
      users.push(...(await store.find(schema, { where, order, limit: 1000, skip: 0 }, schemas.lookup)));
    }
    return { users, total, population: among.length, sampled: among.length > limit };
  }
  if (total <= limit) {
    const users = await store.find(
      schema,
      { where: MATCH_ALL, order, limit: total, skip: 0 },
      schemas.lookup,
    );
    return { users, total, population: total, sampled: false };
  }
  const wanted = new Set(samplePositions(total, limit));
  const users: Row[] = [];
  for (let skip = 0; skip < total; skip += PAGE) {
    const page = await store.find(schema, { where: MATCH_ALL, order, limit: PAGE, skip }, schemas.lookup);
    page.forEach((row, i) => {
      if (wanted.has(skip + i)) users.push(row);
    });
  }
  return { users, total, population: total, sampled: true };
}

/** `n` distinct positions out of `total`, uniformly (a partial Fisher-Yates shuffle). */
function samplePositions(total: number, n: number): number[] {
  const positions = Array.from({ length: total }, (_, i) => i);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(Math.random() * (total - i));
    [positions[i], positions[j]] = [positions[j]!, positions[i]!];
  }
  return positions.slice(0, n);
}

/**
 * The 95% margin, in users, of any count scaled up from a uniform sample of `n` out of `total`:
 * the worst case (a proportion of one half), with the finite population correction.
 */
export function margin(total: number, n: number): number {
  const fpc = Math.sqrt((total - n) / (total - 1));
  return Math.ceil(1.96 * Math.sqrt(0.25 / n) * fpc * total);
}
