import { isObject } from '@bds/client/protocol';
import type { CallerResolver } from '../auth/caller.ts';
import { demandMaster } from '../data/authorize.ts';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import { type Caller, makeCaller } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Row } from '../kernel/records.ts';
import type { Lockout } from './lockout.ts';
import { mfaError, type StoredMfa, verify as verifyMfa } from './mfa.ts';
import { hashPassword, needsRehash, verifyPassword } from './passwords.ts';
import type { Sessions } from './sessions.ts';
import { accountCtx, COL } from './shared.ts';
import type { UserRows } from './user-rows.ts';

const badLogin = () => new BdsError(ErrorCode.OBJECT_NOT_FOUND, 'Invalid username/password.');
const emailNotVerified = () => new BdsError(ErrorCode.EMAIL_NOT_FOUND, 'User email is not verified.');

/**
 * Logins (docs/protocol.md#users-and-sessions): by password under the lockout, with the second
 * factor of an enrolled user; verifyPassword; loginAs for the master key; and the end every login
 * shares (the login triggers, the session). A sign-in with `authData` starts in sign-up.ts.
 */
export class Logins {
  private readonly core: Core;

  constructor(
    private readonly data: Data,
    private readonly rows: UserRows,
    private readonly sessions: Sessions,
    private readonly lockout: Lockout,
    /** Resolves the user who logs in as a caller (with roles) for the login triggers. */
    private readonly callers?: CallerResolver,
  ) {
    this.core = data.core;
  }

  /** With verifyUserEmails and preventLoginWithUnverifiedEmail, a password login waits for the email's verification. */
  loginWaitsForEmail(emailVerified: unknown): boolean {
    const { verifyUserEmails, preventLoginWithUnverifiedEmail } = this.core.options;
    return verifyUserEmails && preventLoginWithUnverifiedEmail && emailVerified !== true;
  }

  /**
   * Every login ends here (password, anonymous id, provider): the beforeLogin trigger may refuse it
   * (no session is made), then the session, then afterLogin. Answers the user's own row and token.
   */
  async complete(
    auth: Caller,
    userId: string,
    authProvider: string,
    ip: string | null,
    /** Writes the login makes once it is allowed (a sign-in's new provider payload). */
    allowed?: () => Promise<void>,
  ): Promise<Row> {
    const triggers = this.core.hooks.account.isEmpty ? undefined : this.core.hooks.account;
    // The login triggers see the user who logs in as the caller.
    const ctx: Ctx | undefined = triggers && {
      ...accountCtx(
        this.callers ? await this.callers.forUser(userId) : makeCaller({ user: { objectId: userId } }),
      ),
      ip,
    };
    if (triggers && ctx) await triggers.beforeLogin(ctx, await this.rows.ownRow(userId));
    await allowed?.();
    const sessionToken = await this.sessions.createForCaller(userId, 'login', authProvider, auth);
    const user = await this.rows.ownRow(userId);
    if (triggers && ctx) triggers.afterLogin(ctx, user);
    return { ...user, sessionToken };
  }

  /**
   * The password check of a login and of verifyPassword: the user named by `username` or `email`
   * and its password, under the lockout. Answers the user's row of internal columns and its lockout key.
   */
  private async checkPassword(
    params: Record<string, unknown>,
  ): Promise<{ row: Record<string, unknown>; key: string }> {
    const { username, email, password } = params;
    if ((typeof username !== 'string' || !username) && (typeof email !== 'string' || !email)) {
      throw new BdsError(ErrorCode.USERNAME_MISSING, 'username/email is required.');
    }
    if (typeof password !== 'string' || password === '') {
      throw new BdsError(ErrorCode.PASSWORD_MISSING, 'password is required.');
    }
    const field = typeof username === 'string' && username ? 'username' : 'email';
    const name = (field === 'username' ? (username as string) : (email as string)).toLowerCase();
    const row = (await this.data.lookups.internal('_User', field, name, [COL.hash, COL.mfa]))[0];
    const key = row ? `user:${row.objectId as string}` : `${field}:${name}`;
    await this.lockout.check(key);
    const ok = await verifyPassword(
      password,
      row?.[COL.hash] as string | undefined,
      this.core.options.passwordHashCost,
    );
    if (!ok || !row) {
      await this.lockout.fail(key);
      throw badLogin();
    }
    const stored = row[COL.hash] as string;
    if (needsRehash(stored)) {
      // An imported hash (docs/transfer.md): replaced by the service's own, unless changed meanwhile.
      const own = await hashPassword(password, this.core.options.passwordHashCost);
      await this.rows.writeInternal(row.objectId as string, { [COL.hash]: own }, { [COL.hash]: stored });
    }
    return { row, key };
  }

  /** POST /login and GET /login. */
  async logIn(auth: Caller, params: Record<string, unknown>, ip: string | null = null): Promise<Row> {
    let authData = params.authData;
    if (typeof authData === 'string') {
      try {
        authData = JSON.parse(authData);
      } catch {
        throw new BdsError(ErrorCode.INVALID_JSON, 'authData must be a JSON object.');
      }
    }
    const { row, key } = await this.checkPassword(params);
    const userId = row.objectId as string;
    await this.checkSecondFactor(row, authData, key);
    await this.lockout.succeed(key);
    if (this.loginWaitsForEmail((await this.data.lookups.userById(userId))?.emailVerified)) {
      throw emailNotVerified();
    }
    return this.complete(auth, userId, 'password', ip);
  }

  /**
   * GET and POST /verifyPassword: the login's password check, without a session: answers the
   * user's own row. The master key may skip the email verification (`ignoreEmailVerification`).
   */
  async verifyPassword(auth: Caller, params: Record<string, unknown>): Promise<Row> {
    const { row, key } = await this.checkPassword(params);
    await this.lockout.succeed(key);
    const userId = row.objectId as string;
    const ignore = params.ignoreEmailVerification;
    const ignoring = auth.isMaster && (ignore === true || ignore === 'true');
    if (!ignoring && this.loginWaitsForEmail((await this.data.lookups.userById(userId))?.emailVerified)) {
      throw emailNotVerified();
    }
    return this.rows.ownRow(userId);
  }

  /**
   * POST /loginAs (master key only): a new session for the user `userId`, as an operator acting for
   * the user; no password, no login triggers (the incumbent's). Answers the user's row and token.
   */
  async logInAs(auth: Caller, params: Record<string, unknown>): Promise<Row> {
    demandMaster(auth, 'loginAs');
    const { userId } = params;
    if (userId === undefined || userId === null || userId === '') {
      throw new BdsError(ErrorCode.INVALID_VALUE, 'userId must not be empty, null, or undefined');
    }
    if (typeof userId !== 'string') throw new BdsError(ErrorCode.INVALID_VALUE, 'userId must be a string.');
    const user = await this.data.lookups.userById(userId);
    if (!user) throw new BdsError(ErrorCode.OBJECT_NOT_FOUND, 'user not found');
    // A session besides the user's others (unlike a login, none of an installation is replaced).
    const sessionToken = await this.sessions.create(
      userId,
      { action: 'login', authProvider: 'masterkey' },
      auth.installationId,
    );
    return { ...(await this.rows.ownRow(userId)), sessionToken };
  }

  /** The second factor of an enrolled user (`row` carries COL.mfa): 211 without a token, 210 for a wrong one. */
  async checkSecondFactor(row: Record<string, unknown>, authData: unknown, key: string): Promise<void> {
    if (!row[COL.mfa]) return;
    await this.lockout.check(key);
    const userId = row.objectId as string;
    const stored = JSON.parse(row[COL.mfa] as string) as StoredMfa;
    const token = isObject(authData) && isObject(authData.mfa) ? authData.mfa.token : undefined;
    if (token === undefined || token === null || token === '') {
      throw new BdsError(ErrorCode.MFA_TOKEN_REQUIRED, 'Missing additional authData mfa.token.');
    }
    const check = typeof token === 'string' ? verifyMfa(stored, token) : { ok: false };
    if (!check.ok) {
      await this.lockout.fail(key);
      throw mfaError();
    }
    if (check.usedRecovery) {
      const next: StoredMfa = {
        ...stored,
        recovery: stored.recovery.filter((h) => h !== check.usedRecovery),
      };
      // Compare-and-set: two logins with the same recovery code cannot both succeed.
      const used = await this.rows.writeInternal(
        userId,
        { [COL.mfa]: JSON.stringify(next) },
        { [COL.mfa]: row[COL.mfa] as string },
      );
      if (!used) throw mfaError();
    }
  }
}
