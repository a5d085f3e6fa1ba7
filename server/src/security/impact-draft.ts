import { isObject } from '@bds/client/protocol';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { WireAcl } from '../kernel/records.ts';

/**
 * A permission draft of POST /security/impact (docs/security-api.md), read and checked before
 * anything is asked of the deciders: the class changes (row ACLs, CLP, protectedFields) and the
 * role changes (users and roles added to or removed from a role).
 */

/** At most this many rows per ACL change, changes per draft and role changes per draft. */
const MAX_IMPACT_ROWS = 1000;
const MAX_CHANGES = 100;
const MAX_MEMBERS = 1000;

const invalid = (message: string) => new BdsError(ErrorCode.INVALID_QUERY, message);

export type ClassChange =
  | { kind: 'acl'; objectIds: string[]; ACL: WireAcl }
  | { kind: 'clp'; classLevelPermissions: Record<string, unknown> }
  | { kind: 'protectedFields'; protectedFields: Record<string, unknown> };

export interface RoleChange {
  roleId: string;
  users: { add: string[]; remove: string[] };
  roles: { add: string[]; remove: string[] };
}

export interface Draft {
  className?: string;
  classChanges: ClassChange[];
  roleChanges: RoleChange[];
}

export function parseDraft(raw: unknown): Draft {
  if (!isObject(raw)) throw new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');
  const unknown = Object.keys(raw).find((k) => !['className', 'change', 'changes', 'roles'].includes(k));
  if (unknown) throw invalid(`Unknown key: ${unknown}.`);
  if (raw.change !== undefined && raw.changes !== undefined)
    throw invalid('Give change or changes, not both.');
  let classChanges: ClassChange[] = [];
  if (raw.change !== undefined) classChanges = [parseChange(raw.change, 'change')];
  else if (raw.changes !== undefined) {
    const list = raw.changes;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CHANGES)
      throw invalid(`changes must list 1 to ${MAX_CHANGES} changes.`);
    classChanges = list.map((c, i) => parseChange(c, `changes[${i}]`));
  }
  let roleChanges: RoleChange[] = [];
  if (raw.roles !== undefined) {
    const list = raw.roles;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CHANGES)
      throw invalid(`roles must list 1 to ${MAX_CHANGES} role changes.`);
    roleChanges = list.map((c, i) => parseRoleChange(c, `roles[${i}]`));
  }
  if (classChanges.length === 0 && roleChanges.length === 0)
    throw invalid('The draft is empty: give change, changes or roles.');
  const className = raw.className;
  if (className !== undefined || classChanges.length > 0) {
    if (typeof className !== 'string' || className === '')
      throw invalid('className must be a non-empty string.');
  }
  return { className: className as string | undefined, classChanges, roleChanges };
}

function parseChange(raw: unknown, where: string): ClassChange {
  if (!isObject(raw)) throw invalid(`${where} must be an object with a kind: acl, clp or protectedFields.`);
  switch (raw.kind) {
    case 'acl': {
      const ids = raw.objectIds;
      if (
        !Array.isArray(ids) ||
        ids.length === 0 ||
        ids.length > MAX_IMPACT_ROWS ||
        ids.some((i) => typeof i !== 'string')
      )
        throw invalid(`${where}.objectIds must list 1 to ${MAX_IMPACT_ROWS} objectIds.`);
      if (!isObject(raw.ACL)) throw invalid(`${where}.ACL must be an ACL object.`);
      return { kind: 'acl', objectIds: [...new Set(ids as string[])], ACL: raw.ACL as WireAcl };
    }
    case 'clp':
      if (!isObject(raw.classLevelPermissions))
        throw invalid(`${where}.classLevelPermissions must be an object.`);
      return { kind: 'clp', classLevelPermissions: raw.classLevelPermissions };
    case 'protectedFields':
      if (!isObject(raw.protectedFields)) throw invalid(`${where}.protectedFields must be an object.`);
      return { kind: 'protectedFields', protectedFields: raw.protectedFields };
    default:
      throw invalid(`${where}.kind must be acl, clp or protectedFields.`);
  }
}

function parseRoleChange(raw: unknown, where: string): RoleChange {
  if (!isObject(raw)) throw invalid(`${where} must be an object with a roleId.`);
  const unknown = Object.keys(raw).find((k) => !['roleId', 'users', 'roles'].includes(k));
  if (unknown) throw invalid(`${where} has an unknown key: ${unknown}.`);
  if (typeof raw.roleId !== 'string' || raw.roleId === '')
    throw invalid(`${where}.roleId must be the objectId of a _Role.`);
  const lists = (key: 'users' | 'roles') => {
    const value = raw[key];
    if (value === undefined) return { add: [], remove: [] };
    if (!isObject(value)) throw invalid(`${where}.${key} must be an object with add and remove.`);
    const extra = Object.keys(value).find((k) => k !== 'add' && k !== 'remove');
    if (extra) throw invalid(`${where}.${key} has an unknown key: ${extra}.`);
    const list = (op: 'add' | 'remove') => {
      const ids = value[op];
      if (ids === undefined) return [];
      if (
        !Array.isArray(ids) ||
        ids.length > MAX_MEMBERS ||
        ids.some((i) => typeof i !== 'string' || i === '')
      )
        throw invalid(`${where}.${key}.${op} must list at most ${MAX_MEMBERS} objectIds.`);
      return [...new Set(ids as string[])];
    };
    return { add: list('add'), remove: list('remove') };
  };
  const change = { roleId: raw.roleId, users: lists('users'), roles: lists('roles') };
  const size = (l: { add: string[]; remove: string[] }) => l.add.length + l.remove.length;
  if (size(change.users) + size(change.roles) === 0)
    throw invalid(`${where} must add or remove users or roles.`);
  return change;
}
