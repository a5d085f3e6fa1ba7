/**
 * ACLs as the console edits and explains them: the principals of an ACL, edits to it, and its
 * effective result in words ("Readable by: members of Editors, which includes members of Admins").
 *
 * Role inheritance follows docs/protocol.md#built-in-classes: a role held in role X's `roles` relation gives its members
 * X's permissions. So an ACL entry for X also reaches the members of every role in X's `roles`
 * relation, and of every role in theirs, and so on.
 */

export interface Permission {
  read?: boolean;
  write?: boolean;
}

export type Acl = Record<string, Permission>;

export type Principal =
  | { kind: 'public'; key: '*' }
  | { kind: 'role'; key: string; role: string }
  | { kind: 'user'; key: string; userId: string };

export const roleKey = (name: string): string => `role:${name}`;

export function principalOf(key: string): Principal {
  if (key === '*') return { kind: 'public', key: '*' };
  if (key.startsWith('role:')) return { kind: 'role', key, role: key.slice(5) };
  return { kind: 'user', key, userId: key };
}

/** A clean copy of a wire ACL: only read/write flags that are true; anything else dropped. */
export function normalizeAcl(value: unknown): Acl {
  const out: Acl = {};
  if (!value || typeof value !== 'object' || Array.isArray(value)) return out;
  for (const [key, perm] of Object.entries(value as Record<string, unknown>)) {
    if (!perm || typeof perm !== 'object') continue;
    const p = perm as Record<string, unknown>;
    const entry: Permission = {};
    if (p.read === true) entry.read = true;
    if (p.write === true) entry.write = true;
    out[key] = entry;
  }
  return out;
}

/** The ACL with `key`'s flag set or cleared (the principal stays listed with no flags). */
export function setPermission(acl: Acl, key: string, op: 'read' | 'write', on: boolean): Acl {
  const entry: Permission = { ...acl[key] };
  if (on) entry[op] = true;
  else delete entry[op];
  return { ...acl, [key]: entry };
}

export function addPrincipal(acl: Acl, key: string): Acl {
  return key in acl ? acl : { ...acl, [key]: { read: true } };
}

export function removePrincipal(acl: Acl, key: string): Acl {
  const { [key]: _gone, ...rest } = acl;
  return rest;
}

/** The ACL as saved: principals without any flag are left out (they grant nothing). */
export function wireAcl(acl: Acl): Acl {
  const out: Acl = {};
  for (const [key, p] of Object.entries(acl)) if (p.read || p.write) out[key] = { ...p };
  return out;
}

/** True when nothing but the master key may read or write (the empty ACL `{}`). */
export const isMasterOnly = (acl: Acl): boolean => Object.keys(wireAcl(acl)).length === 0;

/** Two ACLs grant the same (principals without flags do not count). */
export function sameAcl(a: Acl, b: Acl): boolean {
  const wa = wireAcl(a);
  const wb = wireAcl(b);
  const keys = new Set([...Object.keys(wa), ...Object.keys(wb)]);
  for (const k of keys)
    if (!!wa[k]?.read !== !!wb[k]?.read || !!wa[k]?.write !== !!wb[k]?.write) return false;
  return true;
}

/**
 * The roles whose members an entry for `role` also reaches: the roles in its `roles` relation,
 * then theirs, breadth first, each once. `inheritors` maps a role name to the names of the roles
 * in its `roles` relation.
 */
export function inheritingRoles(role: string, inheritors: Record<string, string[]>): string[] {
  const seen = new Set<string>([role]);
  const out: string[] = [];
  const queue = [...(inheritors[role] ?? [])];
  while (queue.length) {
    const next = queue.shift()!;
    if (seen.has(next)) continue;
    seen.add(next);
    out.push(next);
    queue.push(...(inheritors[next] ?? []));
  }
  return out;
}

/** "a", "a and b", "a, b and c". */
export function listWords(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

export interface AclNames {
  /** Display name (username) by user objectId; unknown ids are shown as ids. */
  users: Record<string, string>;
  /** Role name → names of the roles in its `roles` relation. */
  inheritors: Record<string, string[]>;
}

/** Who holds `op` under this ACL, in words (without the "Readable by:" lead). */
export function holdersWords(acl: Acl, op: 'read' | 'write', names: AclNames): string {
  const keys = Object.entries(wireAcl(acl))
    .filter(([, p]) => p[op])
    .map(([k]) => k);
  if (keys.includes('*')) return 'the public (everyone, signed in or not)';
  const users = keys.filter((k) => principalOf(k).kind === 'user').map((id) => names.users[id] ?? id);
  const roles = keys.flatMap((k) => {
    const p = principalOf(k);
    return p.kind === 'role' ? [p.role] : [];
  });
  const parts: string[] = [];
  if (users.length === 1) parts.push(`the user ${users[0]}`);
  else if (users.length > 1) parts.push(`these ${users.length} users (${listWords(users)})`);
  for (const role of roles) {
    const through = inheritingRoles(role, names.inheritors);
    parts.push(
      through.length
        ? `members of ${role}, which includes members of ${listWords(through)}`
        : `members of ${role}`,
    );
  }
  return parts.length ? parts.join('; ') : 'no one but the master key';
}

export interface AclWords {
  masterOnly: boolean;
  read: string;
  write: string;
}

/** The effective result of an ACL in words. */
export function aclWords(acl: Acl, names: AclNames): AclWords {
  if (isMasterOnly(acl)) {
    const none = 'no one but the master key';
    return { masterOnly: true, read: `Readable by: ${none}.`, write: `Writable by: ${none}.` };
  }
  return {
    masterOnly: false,
    read: `Readable by: ${holdersWords(acl, 'read', names)}.`,
    write: `Writable by: ${holdersWords(acl, 'write', names)}.`,
  };
}

/** A row's ACL field as it acts: a row stored without one is public read and write. */
export const rowAcl = (value: unknown): Acl =>
  value === undefined || value === null ? { '*': { read: true, write: true } } : normalizeAcl(value);

/** The ACL several rows share, or null when they differ. */
export function commonAcl(values: unknown[]): Acl | null {
  if (values.length === 0) return {};
  const first = rowAcl(values[0]);
  return values.every((v) => sameAcl(rowAcl(v), first)) ? first : null;
}
