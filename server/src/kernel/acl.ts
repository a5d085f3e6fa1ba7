import type { StoredAcl, WireAcl } from './records.ts';

/**
 * The ACL rule for one row, in memory: a row without an ACL is public, an empty ACL is
 * master-only, otherwise one of the caller's principals must be granted the access. Answers the
 * granting principal, `'*no-acl*'` for a row without an ACL, or `null` when nothing grants it.
 *
 * This is the in-memory half of the ACL layer; the SQL half compiles the same rule from the
 * query AST's `acl` node (storage/sql/where.ts). A property test holds the two equal.
 */
export const NO_ACL = '*no-acl*';

export function aclGrant(
  acl: WireAcl | StoredAcl | null | undefined,
  principals: readonly string[],
  access: 'read' | 'write',
): string | null {
  if (acl === null || acl === undefined) return NO_ACL;
  const granted = isStored(acl)
    ? (p: string) => acl[access].includes(p)
    : (p: string) => acl[p]?.[access] === true;
  for (const p of principals) if (granted(p)) return p;
  return null;
}

function isStored(acl: WireAcl | StoredAcl): acl is StoredAcl {
  return Array.isArray((acl as StoredAcl).read) && Array.isArray((acl as StoredAcl).write);
}
