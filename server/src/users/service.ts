import type { CallerResolver } from '../auth/caller.ts';
import type { Data } from '../data/data.ts';
import type { MailAdapter } from '../email/mail.ts';
import type { Caller } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import type { Row } from '../kernel/records.ts';
import type { RedisLink } from '../redis/link.ts';
import { AccountUpdates } from './account-update.ts';
import { BackgroundWork } from './background.ts';
import { Lockout } from './lockout.ts';
import { Logins } from './login.ts';
import { type LinkKind, MailLinks } from './mail-links.ts';
import { AuthProviders, type ProviderCheck } from './providers.ts';
import { Sessions } from './sessions.ts';
import type { AccountVia } from './shared.ts';
import { SignUps } from './sign-up.ts';
import { UserRows } from './user-rows.ts';

/**
 * Users and sessions (docs/protocol.md#users-and-sessions): sign-up, login, MFA, logout, session
 * scoping, user updates, anonymous users and their upgrade, and mail-based flows. Every write goes
 * through the write pipeline (source `account`); the parts in this folder add the _User and
 * _Session rules, and this facade composes them for the routes:
 * - sign-up.ts: POST /users (a sign-up, or a sign-in with authData);
 * - login.ts: password logins, verifyPassword, loginAs, the second factor, the login triggers;
 * - sessions.ts: _Session rows, logout, the caller's own user and session;
 * - account-update.ts: PUT and DELETE /users/<id>;
 * - mail-links.ts: password reset and email verification links;
 * - user-rows.ts, background.ts and shared.ts: what the parts share.
 */
export class Users {
  readonly lockout: Lockout;
  /** The sign-in providers besides `anonymous` (the option `auth`, the cloud module's). */
  readonly providers: AuthProviders;
  /** Background work (mail) still running; awaited on close. */
  private readonly work: BackgroundWork;
  private readonly sessions: Sessions;
  private readonly logins: Logins;
  private readonly signUps: SignUps;
  private readonly updates: AccountUpdates;
  private readonly mailLinks: MailLinks;

  constructor(
    data: Data,
    mailer: MailAdapter,
    publicUrl: () => string,
    /** Resolves the user who logs in as a caller (with roles) for the login triggers. */
    callers?: CallerResolver,
    /** Sign-in providers registered by the cloud module. */
    cloudProviders: ReadonlyMap<string, ProviderCheck> = new Map(),
    /** Redis, when several instances share the lockout (option `redisURL`). */
    redis?: RedisLink,
  ) {
    this.lockout = new Lockout(data.core.options.accountLockout, redis);
    this.providers = new AuthProviders(data.core.options.auth, cloudProviders);
    this.work = new BackgroundWork(data.core);
    const rows = new UserRows(data);
    this.sessions = new Sessions(data, rows);
    this.mailLinks = new MailLinks(data, rows, this.sessions, this.work, this.lockout, mailer, publicUrl);
    this.logins = new Logins(data, rows, this.sessions, this.lockout, callers);
    this.signUps = new SignUps(data, rows, this.sessions, this.logins, this.mailLinks, this.providers);
    this.updates = new AccountUpdates(data, rows, this.sessions, this.mailLinks, this.providers);
  }

  /** Runs `work` after the answer is sent (background.ts). */
  background(work: () => Promise<void>): void {
    this.work.run(work);
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  // Sign-up and login

  signUp(
    auth: Caller,
    raw: unknown,
    ip: string | null = null,
    via?: AccountVia,
  ): Promise<{ created: boolean; body: Row }> {
    return this.signUps.signUp(auth, raw, ip, via);
  }

  logIn(auth: Caller, params: Record<string, unknown>, ip: string | null = null): Promise<Row> {
    return this.logins.logIn(auth, params, ip);
  }

  verifyPassword(auth: Caller, params: Record<string, unknown>): Promise<Row> {
    return this.logins.verifyPassword(auth, params);
  }

  logInAs(auth: Caller, params: Record<string, unknown>): Promise<Row> {
    return this.logins.logInAs(auth, params);
  }

  // Sessions

  logOut(auth: Caller, ip: string | null = null): Promise<Record<string, never>> {
    return this.sessions.logOut(auth, ip);
  }

  me(auth: Caller): Promise<Row> {
    return this.sessions.currentUser(auth);
  }

  sessionMe(auth: Caller): Promise<Row> {
    return this.sessions.currentSession(auth);
  }

  upgradeSession(auth: Caller): Promise<Row> {
    return this.sessions.upgrade(auth);
  }

  findSessions(auth: Caller, params: Record<string, unknown>) {
    return this.sessions.find(auth, params);
  }

  getSession(auth: Caller, objectId: string, params: Record<string, unknown>): Promise<Row> {
    return this.sessions.get(auth, objectId, params);
  }

  deleteSession(auth: Caller, objectId: string): Promise<void> {
    return this.sessions.delete(auth, objectId);
  }

  // The user's own account

  update(auth: Caller, objectId: string, raw: unknown, via?: AccountVia): Promise<Row> {
    return this.updates.update(auth, objectId, raw, via);
  }

  delete(auth: Caller, objectId: string, via?: AccountVia): Promise<void> {
    return this.updates.delete(auth, objectId, via);
  }

  // Mail links

  requestPasswordReset(body: unknown, ctx: Ctx): Record<string, never> {
    return this.mailLinks.requestPasswordReset(body, ctx);
  }

  requestVerificationEmail(body: unknown): Record<string, never> {
    return this.mailLinks.requestVerificationEmail(body);
  }

  userForToken(kind: LinkKind, token: string): Promise<{ objectId: string; digest: string } | undefined> {
    return this.mailLinks.userForToken(kind, token);
  }

  resetPassword(token: string, password: string): Promise<boolean> {
    return this.mailLinks.resetPassword(token, password);
  }

  verifyEmail(token: string): Promise<boolean> {
    return this.mailLinks.verifyEmail(token);
  }
}
