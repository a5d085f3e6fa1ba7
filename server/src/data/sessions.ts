import { BdsError, ErrorCode } from '../errors.ts';
import type { Row } from '../storage/adapter.ts';
import type { Auth } from './auth.ts';
import type { Core } from './core.ts';

/** The `_Session` row holding `token`, read with master authority. */
export async function findSessionByToken(core: Core, token: string): Promise<Row | undefined> {
  const schema = core.schemas.get('_Session');
  if (!schema || !token) return undefined;
  const rows = await core.store.find(
    schema,
    {
      where: { type: 'compare', path: ['sessionToken'], op: 'eq', value: token },
      order: [],
      limit: 1,
      skip: 0,
      readers: null,
    },
    core.schemas.lookup,
  );
  return rows[0];
}

/** Resolves a session token to its user; an unknown, revoked or expired token is a 209. */
export async function authForSession(
  core: Core,
  token: string,
  installationId: string | null,
): Promise<Auth> {
  const invalid = () => new BdsError(ErrorCode.INVALID_SESSION_TOKEN, 'Invalid session token');
  const session = await findSessionByToken(core, token);
  const user = session?.user as { objectId?: string } | undefined;
  if (!session || !user?.objectId) throw invalid();
  const expiresAt = (session.expiresAt as { iso?: string } | undefined)?.iso;
  if (expiresAt && Date.parse(expiresAt) <= Date.now()) throw invalid();
  return { isMaster: false, user: { objectId: user.objectId }, sessionToken: token, installationId };
}
