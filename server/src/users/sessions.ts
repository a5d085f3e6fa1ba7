import { SESSION_REQUIRED } from '../access/class.ts';
import { invalidSession } from '../auth/caller.ts';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import { newSessionToken } from '../kernel/ids.ts';
import type { Row } from '../kernel/records.ts';
import { accountCtx, type CreatedWith, SYSTEM, userPointer } from './shared.ts';
import type { UserRows } from './user-rows.ts';

/**
 * _Session rows (docs/protocol.md#users-and-sessions): made at sign-up and login, revoked on
 * logout, password changes and user deletes; the caller's own session and user; the /sessions
 * routes, whose access the `_Session` rule in access/class.ts decides.
 */
export class Sessions {
  private readonly core: Core;

  constructor(
    private readonly data: Data,
    private readonly rows: UserRows,
  ) {
    this.core = data.core;
  }

  async create(userId: string, createdWith: CreatedWith, installationId: string | null): Promise<string> {
    const sessionToken = newSessionToken();
    const iso = new Date(Date.now() + this.core.options.sessionLength * 1000).toISOString();
    const body: Record<string, unknown> = {
      user: userPointer(userId),
      sessionToken,
      expiresAt: { __type: 'Date', iso },
      createdWith,
      ACL: { [userId]: { read: true, write: true } },
    };
    if (installationId) body.installationId = installationId;
    await this.data.writes.create(SYSTEM, '_Session', body);
    return sessionToken;
  }

  /** A new session of the user (replacing the one of the caller's installation, when it names one). */
  async createForCaller(
    userId: string,
    action: CreatedWith['action'],
    authProvider: string,
    auth: Caller,
  ): Promise<string> {
    if (auth.installationId) await this.revoke(userId, { installationId: auth.installationId });
    return this.create(userId, { action, authProvider }, auth.installationId);
  }

  /** Deletes a user's sessions, except the one with token `keep`; only those of `installationId` when given. */
  async revoke(userId: string, opts: { keep?: string | null; installationId?: string } = {}): Promise<void> {
    const rows = await this.data.lookups.sessionsOf(userId, opts.installationId);
    for (const row of rows) {
      if (opts.keep && row.sessionToken === opts.keep) continue;
      await this.data.writes.delete(SYSTEM, '_Session', row.objectId as string);
    }
  }

  private requireSession(auth: Caller): { userId: string; token: string } {
    if (!auth.user || !auth.sessionToken) {
      throw new BdsError(ErrorCode.INVALID_SESSION_TOKEN, SESSION_REQUIRED);
    }
    return { userId: auth.user.objectId, token: auth.sessionToken };
  }

  /** POST /logout: the token stops working. Without a token there is nothing to end. */
  async logOut(auth: Caller, ip: string | null = null): Promise<Record<string, never>> {
    if (auth.sessionToken) {
      const session = await this.data.lookups.sessionByToken(auth.sessionToken);
      if (session) {
        await this.data.writes.delete(SYSTEM, '_Session', session.objectId as string);
        this.core.hooks.account.afterLogout({ ...accountCtx(auth), ip }, session);
      }
    }
    return {};
  }

  /** GET /users/me: the caller's own row with its session token. */
  async currentUser(auth: Caller): Promise<Row> {
    const { userId, token } = this.requireSession(auth);
    return { ...(await this.rows.ownRow(userId)), sessionToken: token };
  }

  /** GET /sessions/me: the caller's session row. */
  async currentSession(auth: Caller): Promise<Row> {
    const { token } = this.requireSession(auth);
    const session = await this.data.lookups.sessionByToken(token);
    if (!session) throw invalidSession();
    return session;
  }

  /**
   * POST /upgradeToRevocableSession: the incumbent's way out of a legacy token. Every session here
   * is revocable already, so the caller's session is replaced by a new one (createdWith upgrade);
   * answers the new session's row.
   */
  async upgrade(auth: Caller): Promise<Row> {
    const { userId, token } = this.requireSession(auth);
    const current = await this.data.lookups.sessionByToken(token);
    if (!current) throw invalidSession();
    const was = current.createdWith as Partial<CreatedWith> | undefined;
    return this.core.store.transaction(async () => {
      const sessionToken = await this.create(
        userId,
        { action: 'upgrade', authProvider: was?.authProvider ?? 'password' },
        auth.installationId,
      );
      await this.data.writes.delete(SYSTEM, '_Session', current.objectId as string);
      return (await this.data.lookups.sessionByToken(sessionToken))!;
    });
  }

  /**
   * GET /sessions: master sees all; a user only their own. Who may read, get and delete sessions
   * is decided by the `_Session` rule in access/class.ts (a caller without a session gets 209).
   */
  async find(auth: Caller, params: Record<string, unknown>) {
    return this.data.reads.find(accountCtx(auth), '_Session', params);
  }

  async get(auth: Caller, objectId: string, params: Record<string, unknown>): Promise<Row> {
    return this.data.reads.get(accountCtx(auth), '_Session', objectId, params);
  }

  /** DELETE /sessions/<id>: revokes it; a user may revoke only their own sessions. */
  async delete(auth: Caller, objectId: string): Promise<void> {
    await this.data.writes.delete(accountCtx(auth), '_Session', objectId);
  }
}
