import { aclGrant, NO_ACL } from '../kernel/acl.ts';
import { type Caller, roleChain } from '../kernel/caller.ts';
import { ErrorCode } from '../kernel/errors.ts';
import type { QueryNode } from '../kernel/query.ts';
import type { StoredAcl, WireAcl } from '../kernel/records.ts';
import { allow, deny, type Verdict } from './verdict.ts';

/**
 * The ACL layer, one rule (kernel/acl.ts: a row without an ACL is public, an empty ACL is
 * master-only, otherwise one of the caller's principals must be granted the access) compiled two
 * ways: `aclCondition` into a row condition of the query AST, which storage turns into SQL (so
 * limit, skip and count stay exact), and `decideAcl` for one row in memory (realtime, triggers,
 * the console's explanation).
 */
export function aclCondition(caller: Caller, access: 'read' | 'write'): QueryNode | undefined {
  if (caller.isMaster) return undefined;
  return { type: 'acl', access, principals: caller.principals };
}

export function decideAcl(
  acl: WireAcl | StoredAcl | null | undefined,
  caller: Caller,
  access: 'read' | 'write',
): Verdict {
  if (caller.isMaster) return allow('master', 'master', 'the master key bypasses ACLs');
  const granted = aclGrant(acl, caller.principals, access);
  if (granted === NO_ACL) return allow('acl', 'acl.noAcl', 'the row has no ACL, so it is public');
  if (granted !== null) {
    const role = granted.startsWith('role:') ? granted.slice(5) : undefined;
    const who = granted === '*' ? 'the public' : role ? `members of ${role}` : `user ${granted}`;
    return allow('acl', 'acl.grant', `the row's ACL grants ${access} to ${who}`, {
      entry: granted,
      ...(role ? { roleChain: roleChain(caller, role) } : {}),
    });
  }
  return deny(
    'acl',
    'acl.none',
    ErrorCode.OBJECT_NOT_FOUND,
    'Object not found.',
    `no entry of the row's ACL grants ${access} to the caller (${caller.principals.join(', ')})`,
  );
}
