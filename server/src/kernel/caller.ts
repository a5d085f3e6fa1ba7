/**
 * Who is calling, resolved once per request by auth/ before anything else runs: the master key,
 * a user (with the roles it holds, transitively), or an anonymous caller with application keys.
 * Every layer below reads this; none resolves identity again.
 */
export interface Caller {
  readonly kind: 'master' | 'user' | 'anonymous';
  readonly isMaster: boolean;
  /** The session's user. */
  readonly user: { readonly objectId: string } | null;
  /** Names of the roles the user holds, directly or through other roles. */
  readonly roles: readonly string[];
  /**
   * How each role is held: the role whose `roles` relation holds it, or `null` when the user is a
   * direct member. Follow it to name the chain that grants an access.
   */
  readonly roleVia: ReadonlyMap<string, string | null>;
  /** What ACL and CLP entries are matched against: `*`, the user id, `role:<name>`; empty for master. */
  readonly principals: readonly string[];
  readonly sessionToken: string | null;
  readonly installationId: string | null;
}

const NO_ROLES: ReadonlyMap<string, string | null> = new Map();

export const MASTER: Caller = Object.freeze({
  kind: 'master',
  isMaster: true,
  user: null,
  roles: [],
  roleVia: NO_ROLES,
  principals: [],
  sessionToken: null,
  installationId: null,
});

/** An anonymous caller without an installation id: one shared, frozen object. */
const ANONYMOUS: Caller = Object.freeze({
  kind: 'anonymous',
  isMaster: false,
  user: null,
  roles: Object.freeze([]),
  roleVia: NO_ROLES,
  principals: Object.freeze(['*']),
  sessionToken: null,
  installationId: null,
});

/** The one place a caller's principals are computed. */
export function makeCaller(init: {
  isMaster?: boolean;
  user?: { objectId: string } | null;
  roles?: ReadonlyArray<{ name: string; via: string | null }>;
  sessionToken?: string | null;
  installationId?: string | null;
}): Caller {
  const installationId = init.installationId ?? null;
  if (init.isMaster) return installationId ? { ...MASTER, installationId } : MASTER;
  const user = init.user ?? null;
  if (!user) {
    if (installationId === null) return ANONYMOUS;
    return { ...ANONYMOUS, installationId };
  }
  const roleVia = new Map<string, string | null>();
  for (const { name, via } of init.roles ?? [])
    if (!roleVia.has(name) || via === null) roleVia.set(name, via);
  const roles = [...roleVia.keys()].sort();
  // Frozen: the caller resolver hands the same caller to every request of a session.
  return Object.freeze({
    kind: 'user',
    isMaster: false,
    user: Object.freeze({ objectId: user.objectId }),
    roles: Object.freeze(roles),
    roleVia,
    principals: Object.freeze(['*', user.objectId, ...roles.map((name) => `role:${name}`)]),
    sessionToken: init.sessionToken ?? null,
    installationId,
  });
}

export const anonymous = (installationId: string | null = null): Caller => makeCaller({ installationId });

/**
 * The chain through which the caller holds `role`: `['Admins', 'Editors']` when the user is a member
 * of Admins and Admins is held in Editors' `roles` relation. Empty when the role is not held.
 */
export function roleChain(caller: Caller, role: string): string[] {
  const chain: string[] = [];
  let current: string | null | undefined = role;
  const seen = new Set<string>();
  while (current && caller.roleVia.has(current) && !seen.has(current)) {
    seen.add(current);
    chain.unshift(current);
    current = caller.roleVia.get(current);
  }
  return chain;
}
