/** Who is calling, resolved once per request from its credentials. */
export interface Auth {
  isMaster: boolean;
  /** The session's user, when a valid session token was sent. */
  user: { objectId: string } | null;
  sessionToken: string | null;
  installationId: string | null;
  /** Names of the roles the user holds (transitively); resolved by auth/roles.ts, absent until then. */
  roles?: readonly string[];
}

export const MASTER: Auth = { isMaster: true, user: null, sessionToken: null, installationId: null };

export function anonymous(installationId: string | null = null): Auth {
  return { isMaster: false, user: null, sessionToken: null, installationId };
}

/** ACL principals of a non-master caller; `null` for master (no ACL applies). */
export function principalsOf(auth: Auth): string[] | null {
  if (auth.isMaster) return null;
  if (!auth.user) return ['*'];
  return ['*', auth.user.objectId, ...(auth.roles ?? []).map((name) => `role:${name}`)];
}
