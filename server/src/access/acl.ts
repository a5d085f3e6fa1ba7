import type { Auth } from '../data/auth.ts';
import { notFound } from '../errors.ts';
import type { StoredAcl } from '../storage/adapter.ts';
import { principalsFor } from './clp.ts';
import { allow, deny, type Verdict } from './verdict.ts';

/**
 * ACL layer for one row, as data (the console explains with it). Enforcement itself happens in
 * SQL (storage/sql/where.ts aclCondition); this function states the same rule: a row with no ACL
 * is public, an empty ACL is master-only, otherwise one of the caller's principals must be listed.
 */
export function aclVerdict(acl: StoredAcl | null, access: 'read' | 'write', auth: Auth): Verdict {
  if (auth.isMaster) return allow('master', 'the master key bypasses ACLs');
  if (acl === null) return allow('acl', 'the row has no ACL (public)');
  const granted = principalsFor(auth).find((p) => acl[access].includes(p));
  if (granted) return allow('acl', `${access} is granted to ${granted}`);
  const e = notFound();
  return deny('acl', e.code, e.message, `no ${access} entry of the ACL matches the caller`);
}
