import type { Auth } from '../data/auth.ts';
import { ErrorCode } from '../errors.ts';
import type { QueryNode } from '../query/ast.ts';
import type { ClassSchema } from '../schema/types.ts';
import { allow, deny, type Verdict } from './verdict.ts';

export type ClpOperation = 'find' | 'get' | 'count' | 'create' | 'update' | 'delete' | 'addField';

const READ_OPERATIONS = new Set<ClpOperation>(['find', 'get', 'count']);
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const permissionDenied = (op: string, className: string) =>
  `Permission denied for action ${op} on class ${className}.`;
export const NEEDS_AUTHENTICATION = 'Permission denied, user needs to be authenticated.';

/** The principals a caller's CLP and ACL entries are matched against. */
export function principalsFor(auth: Auth): string[] {
  if (!auth.user) return ['*'];
  return ['*', auth.user.objectId, ...(auth.roles ?? []).map((name) => `role:${name}`)];
}

/** A condition that a row's pointer (or array of pointers) field points at the user. */
export function pointsAtUser(fields: readonly string[], userId: string): QueryNode {
  const pointer = { __type: 'Pointer', className: '_User', objectId: userId };
  const children: QueryNode[] = fields.map((f) => ({ type: 'compare', path: [f], op: 'eq', value: pointer }));
  return children.length === 1 ? children[0]! : { type: 'or', children };
}

/**
 * CLP layer: may this caller do `op` on the class at all? An operation without an entry is public.
 * Order of the checks: `*`, requiresAuthentication (101 without a user), the caller's user id and
 * roles, then pointer permissions (`pointerFields`, `readUserFields` for reads and
 * `writeUserFields` for writes), which allow with a row condition evaluated in SQL.
 */
export function clpVerdict(
  schema: Pick<ClassSchema, 'className' | 'classLevelPermissions'>,
  op: ClpOperation,
  auth: Auth,
): Verdict {
  if (auth.isMaster) return allow('master', 'the master key bypasses class-level permissions');
  const { className } = schema;
  const clp = schema.classLevelPermissions ?? {};
  const perms = clp[op];
  if (perms === undefined) return allow('clp', `${op} has no class-level permission entry (public)`);
  const entry = isObject(perms) ? perms : {};
  if (entry['*'] === true) return allow('clp', `${op} is public`);
  const denied = () =>
    deny(
      'clp',
      ErrorCode.OPERATION_FORBIDDEN,
      permissionDenied(op, className),
      `no ${op} grant matches the caller`,
    );
  if (entry.requiresAuthentication === true) {
    if (!auth.user) {
      return deny(
        'clp',
        ErrorCode.OBJECT_NOT_FOUND,
        NEEDS_AUTHENTICATION,
        `${op} requires an authenticated user and no session token was sent`,
      );
    }
    return allow('clp', `${op} is open to authenticated users`);
  }
  for (const principal of principalsFor(auth)) {
    if (principal !== '*' && entry[principal] === true)
      return allow('clp', `${op} is granted to ${principal}`);
  }
  if (op === 'addField') return denied();
  const userFields = clp[READ_OPERATIONS.has(op) ? 'readUserFields' : 'writeUserFields'];
  const fields = [
    ...(Array.isArray(entry.pointerFields) ? entry.pointerFields : []),
    ...(Array.isArray(userFields) ? userFields : []),
  ].filter((f): f is string => typeof f === 'string');
  if (fields.length > 0) {
    // A new row cannot point at anyone yet: pointer permissions never grant create.
    if (op === 'create' || !auth.user) return denied();
    return allow(
      'clp',
      `${op} is granted on rows whose ${fields.join(' or ')} points at the caller`,
      pointsAtUser([...new Set(fields)], auth.user.objectId),
    );
  }
  return denied();
}
