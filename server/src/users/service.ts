import { createHash, randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { isObject } from '@bds/client/protocol';
import { SESSION_REQUIRED } from '../access/class.ts';
import { type CallerResolver, invalidSession } from '../auth/caller.ts';
import { demandMaster, demandOwnAccount } from '../data/authorize.ts';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import { fillFileUrls } from '../data/file-urls.ts';
import { mayChooseObjectId, takeChosenObjectId } from '../data/write-body.ts';
import type { MailAdapter } from '../email/mail.ts';
import { type Caller, MASTER, makeCaller } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode, notFound } from '../kernel/errors.ts';
import { newObjectId, newSessionToken } from '../kernel/ids.ts';
import type { Row } from '../kernel/records.ts';
import { USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';
import type { RedisLink } from '../redis/link.ts';
import { Lockout } from './lockout.ts';
import { enrol, mfaError, type StoredMfa, verify as verifyMfa } from './mfa.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import {
  AuthProviders,
  type ProviderCheck,
  type ProviderStep,
  providerPayload,
  unsupportedService,
} from './providers.ts';

/** Internal _User columns (created by the store's migrations). */
export const COL = USER_INTERNAL_COLUMNS;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const pointer = (objectId: string) => ({ __type: 'Pointer', className: '_User', objectId });

/** A call made through the account rules, with the caller's authority or the service's own (MASTER). */
const accountCtx = (caller: Caller): Ctx => ({ caller, source: 'account', context: {} });
const SYSTEM = accountCtx(MASTER);
const badLogin = () => new BdsError(ErrorCode.OBJECT_NOT_FOUND, 'Invalid username/password.');
const forbidden = (message: string) => new BdsError(ErrorCode.OPERATION_FORBIDDEN, message);
const alreadyLinked = () => new BdsError(ErrorCode.ACCOUNT_ALREADY_LINKED, 'this auth is already used');
const emailNotVerified = () => new BdsError(ErrorCode.EMAIL_NOT_FOUND, 'User email is not verified.');

/** Fields a sign-up answer leaves out even when the service set them (the incumbent's answer). */
const NOT_ECHOED = new Set(['objectId', 'createdAt', 'updatedAt', 'ACL', 'authData', 'sessionToken']);

/** Whether a provider payload sent again holds nothing new: each of its keys as stored (the incumbent's rule). */
const unchanged = (sent: Record<string, unknown>, stored: unknown): boolean =>
  isObject(stored) && Object.keys(sent).every((key) => isDeepStrictEqual(sent[key], stored[key]));

/** SHA-256 of a one-time token: the store keeps digests, so a copy of the database opens no account. */
export const tokenDigest = (token: string) => createHash('sha256').update(token).digest('hex');

export type CreatedWith = { action: 'signup' | 'login' | 'upgrade'; authProvider: string };

/** What a body's `authData` asks of the account rules at sign-up (anonymous and provider links). */
interface SignInLinks {
  anonymousId: string | undefined;
  /** Provider payloads to link, by provider (null entries dropped). */
  providers: Map<string, Record<string, unknown>>;
}

/**
 * Users and sessions (docs/protocol.md#users-and-sessions): sign-up, login, MFA,
 * logout, session scoping, user updates, anonymous users and their upgrade, and mail-based flows.
 * Every write goes through the write pipeline (source `account`); this module adds the _User and
 * _Session rules.
 */
export class Users {
  readonly lockout: Lockout;
  /** The sign-in providers besides `anonymous` (the option `auth`, the cloud module's). */
  readonly providers: AuthProviders;
  /** Background work (mail) still running; awaited on close. */
  private readonly pending = new Set<Promise<void>>();
  private readonly core: Core;

  constructor(
    private readonly data: Data,
    readonly mailer: MailAdapter,
    readonly publicUrl: () => string,
    /** Resolves the user who logs in as a caller (with roles) for the login triggers. */
    private readonly callers?: CallerResolver,
    /** Sign-in providers registered by the cloud module. */
    cloudProviders: ReadonlyMap<string, ProviderCheck> = new Map(),
    /** Redis, when several instances share the lockout (option `redisURL`). */
    redis?: RedisLink,
  ) {
    this.core = data.core;
    this.lockout = new Lockout(this.core.options.accountLockout, redis);
    this.providers = new AuthProviders(this.core.options.auth, cloudProviders);
  }

  /**
   * Runs `work` after the answer is sent (mail), so timing tells nothing; errors are logged without
   * data. Inside a transaction it waits for the commit: a rolled-back write (a dry run) sends nothing.
   */
  background(work: () => Promise<void>): void {
    if (this.core.store.inTransaction()) this.core.store.afterCommit(() => this.start(work));
    else this.start(work);
  }

  private start(work: () => Promise<void>): void {
    const p = work()
      .catch((err: unknown) => {
        // The message only: a mail task's data (addresses, links with tokens) stays out of the log.
        this.core.log.error(
          { err: err instanceof Error ? err.message : 'error' },
          'background mail task failed',
        );
      })
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  async idle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  // ---------------------------------------------------------------------------------------------
  // Reading
  // ---------------------------------------------------------------------------------------------

  private async internalOf(
    objectId: string,
    columns: string[],
  ): Promise<Record<string, unknown> | undefined> {
    return (await this.data.lookups.internal('_User', 'objectId', objectId, columns))[0];
  }

  /** The caller's own row in full (GET /users/me, sign-up and login answers): never the password. */
  async ownRow(objectId: string): Promise<Row> {
    const row = await this.data.lookups.userById(objectId);
    if (!row) throw invalidSession();
    delete row.password;
    fillFileUrls(this.core, this.core.schemas.get('_User')!, [row]);
    const internal = await this.internalOf(objectId, [COL.mfa]);
    if (internal?.[COL.mfa])
      row.authData = { ...(isObject(row.authData) ? row.authData : {}), mfa: { status: 'enabled' } };
    return row;
  }

  // ---------------------------------------------------------------------------------------------
  // Sessions
  // ---------------------------------------------------------------------------------------------

  async createSession(
    userId: string,
    createdWith: CreatedWith,
    installationId: string | null,
  ): Promise<string> {
    const sessionToken = newSessionToken();
    const iso = new Date(Date.now() + this.core.options.sessionLength * 1000).toISOString();
    const body: Record<string, unknown> = {
      user: pointer(userId),
      sessionToken,
      expiresAt: { __type: 'Date', iso },
      createdWith,
      ACL: { [userId]: { read: true, write: true } },
    };
    if (installationId) body.installationId = installationId;
    await this.data.writes.create(SYSTEM, '_Session', body);
    return sessionToken;
  }

  /** Deletes a user's sessions, except the one with token `keep`; only those of `installationId` when given. */
  async revokeSessions(
    userId: string,
    opts: { keep?: string | null; installationId?: string } = {},
  ): Promise<void> {
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

  async me(auth: Caller): Promise<Row> {
    const { userId, token } = this.requireSession(auth);
    return { ...(await this.ownRow(userId)), sessionToken: token };
  }

  async sessionMe(auth: Caller): Promise<Row> {
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
  async upgradeSession(auth: Caller): Promise<Row> {
    const { userId, token } = this.requireSession(auth);
    const current = await this.data.lookups.sessionByToken(token);
    if (!current) throw invalidSession();
    const was = current.createdWith as Partial<CreatedWith> | undefined;
    return this.core.store.transaction(async () => {
      const sessionToken = await this.createSession(
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
  async findSessions(auth: Caller, params: Record<string, unknown>) {
    return this.data.reads.find(accountCtx(auth), '_Session', params);
  }

  async getSession(auth: Caller, objectId: string, params: Record<string, unknown>): Promise<Row> {
    return this.data.reads.get(accountCtx(auth), '_Session', objectId, params);
  }

  /** DELETE /sessions/<id>: revokes it; a user may revoke only their own sessions. */
  async deleteSession(auth: Caller, objectId: string): Promise<void> {
    await this.data.writes.delete(accountCtx(auth), '_Session', objectId);
  }

  // ---------------------------------------------------------------------------------------------
  // Sign-up and login
  // ---------------------------------------------------------------------------------------------

  /**
   * POST /users: a sign-up, or a sign-in with `authData` (anonymous or a provider) whose id already
   * belongs to a user, which answers `created: false` (HTTP 200) with the user's row and a new
   * session. A sign-up answers what the incumbent answers: `objectId`, `createdAt`, the session
   * token, and the fields stored otherwise than sent (a lowercased or chosen username, a lowercased
   * email, `emailVerified: false` with verifyUserEmails, a File's url, what a beforeSave changed).
   */
  async signUp(
    auth: Caller,
    raw: unknown,
    ip: string | null = null,
  ): Promise<{ created: boolean; body: Row }> {
    if (!isObject(raw)) throw new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');
    const chosen = takeChosenObjectId(raw, mayChooseObjectId(auth.isMaster, this.core.options));
    const body: Record<string, unknown> = { ...(chosen.body as Record<string, unknown>) };
    const password = body.password;
    delete body.password;
    this.checkWritableFields(auth, body);
    const internal: Record<string, string | null> = {};

    let links: SignInLinks = { anonymousId: undefined, providers: new Map() };
    if (body.authData !== undefined) {
      const authData = body.authData;
      if (!isObject(authData)) throw new BdsError(ErrorCode.INCORRECT_TYPE, 'authData must be an object.');
      links = this.signInLinks(auth, authData);
      const owners = await this.ownersOf(links);
      if (owners.length > 0) {
        const owner = owners.length === 1 ? await this.data.lookups.userById(owners[0]!) : undefined;
        // The payloads are checked before a 208 too: without a valid one, nothing is learnt.
        await this.checkPayloads(auth, links.providers, 'validateLogin', owner, ip);
        if (!owner) throw alreadyLinked();
        return { created: false, body: await this.signInLinked(auth, owner, links, authData, ip) };
      }
      await this.checkPayloads(auth, links.providers, 'validateSetUp', undefined, ip);
      if ('mfa' in authData) throw mfaError('MFA is enrolled after sign-up, with PUT /users/<objectId>.');
      if (links.anonymousId !== undefined) internal[COL.anonymousId] = links.anonymousId;
      const stored: Record<string, unknown> = Object.fromEntries(links.providers);
      if (links.anonymousId !== undefined) stored.anonymous = authData.anonymous;
      body.authData = Object.keys(stored).length ? stored : undefined;
      if (body.authData === undefined) delete body.authData;
    }
    const signInProvider =
      links.anonymousId !== undefined
        ? 'anonymous'
        : [...links.providers.keys()].sort().join(',') || undefined;

    if (signInProvider !== undefined && body.username === undefined) {
      body.username = newObjectId(25).toLowerCase();
    }
    if (typeof body.username !== 'string' || body.username.trim() === '') {
      throw new BdsError(ErrorCode.USERNAME_MISSING, 'bad or missing username');
    }
    body.username = body.username.toLowerCase();
    if (password !== undefined || (!auth.isMaster && signInProvider === undefined)) {
      if (typeof password !== 'string' || password === '') {
        throw new BdsError(ErrorCode.PASSWORD_MISSING, 'password is required');
      }
      internal[COL.hash] = await hashPassword(password, this.core.options.passwordHashCost);
    }
    this.normaliseEmail(body);

    const objectId = chosen.objectId ?? newObjectId();
    const acl = body.ACL;
    body.ACL = isObject(acl)
      ? { ...acl, [objectId]: { read: true, write: true } }
      : acl === undefined
        ? { [objectId]: { read: true, write: true } }
        : acl; // not an object: the pipeline answers 123
    let verifyToken: string | undefined;
    if (this.core.options.verifyUserEmails && typeof body.email === 'string') {
      if (!auth.isMaster || body.emailVerified === undefined) body.emailVerified = false;
      if (body.emailVerified === false) {
        verifyToken = randomBytes(32).toString('hex');
        internal[COL.verifyToken] = tokenDigest(verifyToken);
        internal[COL.verifyExpires] = this.expiry(this.core.options.emailVerifyTokenValidity);
      }
    }
    await this.checkUnique(body.username as string, body.email);
    // A session for whoever can sign in: by password (once the email is verified, with
    // preventLoginWithUnverifiedEmail), by an anonymous id or a provider.
    const signsIn =
      signInProvider !== undefined ||
      (typeof internal[COL.hash] === 'string' && !this.loginWaitsForEmail(body.emailVerified));
    const answer = await this.core.store.transaction(async () => {
      let created: Row;
      try {
        created = await this.data.writes.create(accountCtx(auth), '_User', body, { objectId, internal });
      } catch (err) {
        throw await this.explainDuplicate(err, body.username as string, body.email);
      }
      // The fields stored otherwise than sent come back (the SDKs keep what they sent).
      const row = await this.ownRow(objectId);
      for (const [field, value] of Object.entries(row)) {
        if (!NOT_ECHOED.has(field) && !isDeepStrictEqual(value, raw[field])) created[field] = value;
      }
      if (!signsIn) return created;
      const sessionToken = await this.newSession(objectId, 'signup', signInProvider ?? 'password', auth);
      return { ...created, sessionToken };
    });
    if (verifyToken) {
      const email = body.email as string;
      const token = verifyToken;
      this.background(() => this.sendVerificationMail(email, body.username as string, token));
    }
    return { created: true, body: answer };
  }

  /**
   * The links a sign-up's `authData` asks for: the anonymous id, and provider payloads (each with
   * a string id). A client may name only providers that are configured (252 otherwise); the master
   * key writes any, unchecked.
   */
  private signInLinks(auth: Caller, authData: Record<string, unknown>): SignInLinks {
    const links: SignInLinks = { anonymousId: undefined, providers: new Map() };
    for (const [provider, value] of Object.entries(authData)) {
      if (provider === 'anonymous') links.anonymousId = anonymousIdOf(value);
      else if (provider === 'mfa') {
        // Only as the second factor of a sign-in (checked there); enrolment is a PUT.
      } else if (value !== null) {
        if (!auth.isMaster && !this.providers.has(provider)) throw unsupportedService();
        links.providers.set(provider, providerPayload(provider, value));
      }
    }
    return links;
  }

  /** The users (distinct objectIds) already linked to the anonymous id or a provider id of `links`. */
  private async ownersOf(links: SignInLinks): Promise<string[]> {
    const owners = new Set<string>();
    if (links.anonymousId !== undefined) {
      const rows = await this.data.lookups.internal('_User', COL.anonymousId, links.anonymousId, []);
      for (const row of rows) owners.add(row.objectId as string);
    }
    for (const [provider, payload] of links.providers) {
      for (const id of await this.data.lookups.usersByAuthId(provider, payload.id as string)) owners.add(id);
    }
    return [...owners];
  }

  /** Checks each payload with its provider (the master key's are trusted, as all its writes are). */
  private async checkPayloads(
    auth: Caller,
    payloads: Iterable<[string, Record<string, unknown>]> | Map<string, Record<string, unknown>>,
    step: ProviderStep | ((provider: string) => ProviderStep),
    user: Row | undefined,
    ip: string | null,
  ): Promise<void> {
    if (auth.isMaster) return;
    const { password: _password, authData: _authData, ...visible } = user ?? {};
    for (const [provider, payload] of [...payloads].sort(([a], [b]) => (a < b ? -1 : 1))) {
      await this.providers.validate(provider, payload, {
        step: typeof step === 'function' ? step(provider) : step,
        caller: auth,
        user: user ? visible : undefined,
        ip,
      });
    }
  }

  /**
   * A sign-in with `authData` linked to `user`: the second factor of an enrolled user, a changed
   * provider payload stored, then the login as any other (triggers, session).
   */
  private async signInLinked(
    auth: Caller,
    user: Row,
    links: SignInLinks,
    authData: Record<string, unknown>,
    ip: string | null,
  ): Promise<Row> {
    const userId = user.objectId as string;
    const internal = (await this.internalOf(userId, [COL.mfa])) ?? {};
    // An enrolled user needs the second factor on every login path, the anonymous id included.
    await this.checkMfa({ ...internal, objectId: userId }, authData, `user:${userId}`);
    const current: Record<string, unknown> = isObject(user.authData) ? { ...user.authData } : {};
    let changed = false;
    for (const [provider, payload] of links.providers) {
      if (unchanged(payload, current[provider])) continue;
      current[provider] = payload;
      changed = true;
    }
    const provider =
      links.anonymousId !== undefined ? 'anonymous' : [...links.providers.keys()].sort().join(',');
    // A new payload is stored once beforeLogin let the login through (a refused login changes nothing).
    return this.completeLogin(auth, userId, provider, ip, async () => {
      if (changed) await this.data.writes.update(SYSTEM, '_User', userId, { authData: current });
    });
  }

  /** With verifyUserEmails and preventLoginWithUnverifiedEmail, a password login waits for the email's verification. */
  private loginWaitsForEmail(emailVerified: unknown): boolean {
    const { verifyUserEmails, preventLoginWithUnverifiedEmail } = this.core.options;
    return verifyUserEmails && preventLoginWithUnverifiedEmail && emailVerified !== true;
  }

  /** A new session of the user (replacing the one of the caller's installation, when it names one). */
  private async newSession(
    userId: string,
    action: CreatedWith['action'],
    authProvider: string,
    auth: Caller,
  ): Promise<string> {
    if (auth.installationId) await this.revokeSessions(userId, { installationId: auth.installationId });
    return this.createSession(userId, { action, authProvider }, auth.installationId);
  }

  /**
   * Every login ends here (password, anonymous id, provider): the beforeLogin trigger may refuse it
   * (no session is made), then the session, then afterLogin. Answers the user's own row and token.
   */
  private async completeLogin(
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
    if (triggers && ctx) await triggers.beforeLogin(ctx, await this.ownRow(userId));
    await allowed?.();
    const sessionToken = await this.newSession(userId, 'login', authProvider, auth);
    const user = await this.ownRow(userId);
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
    await this.checkMfa(row, authData, key);
    await this.lockout.succeed(key);
    if (this.loginWaitsForEmail((await this.data.lookups.userById(userId))?.emailVerified)) {
      throw emailNotVerified();
    }
    return this.completeLogin(auth, userId, 'password', ip);
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
    return this.ownRow(userId);
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
    const sessionToken = await this.createSession(
      userId,
      { action: 'login', authProvider: 'masterkey' },
      auth.installationId,
    );
    return { ...(await this.ownRow(userId)), sessionToken };
  }

  /** The second factor of an enrolled user (`row` carries COL.mfa): 211 without a token, 210 for a wrong one. */
  private async checkMfa(row: Record<string, unknown>, authData: unknown, key: string): Promise<void> {
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
      const used = await this.writeInternal(
        userId,
        { [COL.mfa]: JSON.stringify(next) },
        { [COL.mfa]: row[COL.mfa] as string },
      );
      if (!used) throw mfaError();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Updates and deletes
  // ---------------------------------------------------------------------------------------------

  /** PUT /users/<id>: own session (or master) only; password changes revoke the other sessions. */
  async update(auth: Caller, objectId: string, raw: unknown): Promise<Row> {
    // Before the body is read: another caller learns nothing about the row or the names taken.
    demandOwnAccount(auth, 'update', objectId);
    if (!isObject(raw)) throw new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');
    const body: Record<string, unknown> = { ...raw };
    const password = body.password;
    delete body.password;
    this.checkWritableFields(auth, body);
    const current = await this.data.lookups.userById(objectId);
    if (!current) throw notFound();
    const currentInternal = (await this.internalOf(objectId, [COL.anonymousId, COL.mfa])) ?? {};
    const internal: Record<string, string | null> = {};
    const extra: Row = {};

    if (password !== undefined) {
      if (typeof password !== 'string' || password === '') {
        throw new BdsError(ErrorCode.PASSWORD_MISSING, 'password cannot be empty.');
      }
      internal[COL.hash] = await hashPassword(password, this.core.options.passwordHashCost);
      internal[COL.resetToken] = null;
      internal[COL.resetExpires] = null;
    }
    if (body.username !== undefined) {
      if (typeof body.username !== 'string' || body.username.trim() === '') {
        throw new BdsError(ErrorCode.USERNAME_MISSING, 'bad or missing username');
      }
      body.username = body.username.toLowerCase();
    }
    this.normaliseEmail(body);

    let linksAnonymous = false;
    if (body.authData !== undefined) {
      const authData = body.authData;
      if (authData !== null && !isObject(authData))
        throw new BdsError(ErrorCode.INCORRECT_TYPE, 'authData must be an object.');
      const merged: Record<string, unknown> = isObject(current.authData) ? { ...current.authData } : {};
      /** Provider payloads this update links (new or changed), to check and to keep unique. */
      const linking = new Map<string, Record<string, unknown>>();
      for (const [provider, value] of Object.entries(authData ?? {})) {
        if (provider === 'mfa') {
          if (value === null) {
            if (!auth.isMaster) throw forbidden('Only the master key can remove MFA.');
            internal[COL.mfa] = null;
          } else {
            if (currentInternal[COL.mfa] && !auth.isMaster) throw mfaError('MFA is already enabled.');
            const { stored, recovery } = enrol(value);
            internal[COL.mfa] = JSON.stringify(stored);
            extra.authDataResponse = { mfa: { recovery } };
          }
        } else if (provider === 'anonymous') {
          if (value === null) {
            delete merged.anonymous;
            internal[COL.anonymousId] = null;
          } else if (isObject(value) && unchanged(value, merged.anonymous)) {
            // The anonymous id the user holds, sent back: nothing to change.
          } else {
            // Linked by the user (or the master key): a login path of the user's own choosing,
            // unless another user holds the id.
            const id = anonymousIdOf(value);
            const owners = await this.data.lookups.internal('_User', COL.anonymousId, id, []);
            if (owners.some((row) => row.objectId !== objectId)) throw alreadyLinked();
            merged.anonymous = { id };
            internal[COL.anonymousId] = id;
            linksAnonymous = true;
          }
        } else if (value === null) {
          delete merged[provider]; // unlinking needs no provider
        } else {
          if (!auth.isMaster && !this.providers.has(provider)) throw unsupportedService();
          const payload = providerPayload(provider, value);
          // A payload sent back as stored (or a part of it) is not a new link: nothing to check.
          if (unchanged(payload, merged[provider])) continue;
          linking.set(provider, payload);
        }
      }
      if (authData === null) {
        if (!auth.isMaster) throw forbidden('Only the master key can clear authData.');
        for (const k of Object.keys(merged)) delete merged[k];
        internal[COL.anonymousId] = null;
      }
      // Checked before the 208: without a valid payload a caller learns nothing about who holds an id.
      const linked = isObject(current.authData) ? current.authData : {};
      await this.checkPayloads(
        auth,
        linking,
        (provider) => (isObject(linked[provider]) ? 'validateUpdate' : 'validateSetUp'),
        current,
        null,
      );
      for (const [provider, payload] of linking) {
        const owners = await this.data.lookups.usersByAuthId(provider, payload.id as string);
        if (owners.some((owner) => owner !== objectId)) throw alreadyLinked();
        merged[provider] = payload;
      }
      body.authData = Object.keys(merged).length ? merged : null;
    }
    // A user cannot lock itself out of its own row: its own entry stays (the incumbent's rule).
    if (!auth.isMaster && isObject(body.ACL))
      body.ACL = { ...body.ACL, [objectId]: { read: true, write: true } };

    const wasAnonymous =
      Boolean(currentInternal[COL.anonymousId]) || isObject((current.authData as Row)?.anonymous);
    const rotate = !auth.isMaster && auth.sessionToken !== null && wasAnonymous && password !== undefined;
    const emailChanged = typeof body.email === 'string' && body.email !== current.email;
    if (body.email !== undefined && body.email !== current.email) {
      // Reset and verification links mailed to the previous address must not outlive the change.
      internal[COL.resetToken] = null;
      internal[COL.resetExpires] = null;
      internal[COL.verifyToken] = null;
      internal[COL.verifyExpires] = null;
    }
    let verifyToken: string | undefined;
    if (
      this.core.options.verifyUserEmails &&
      emailChanged &&
      !(auth.isMaster && body.emailVerified !== undefined)
    ) {
      body.emailVerified = false;
      verifyToken = randomBytes(32).toString('hex');
      internal[COL.verifyToken] = tokenDigest(verifyToken);
      internal[COL.verifyExpires] = this.expiry(this.core.options.emailVerifyTokenValidity);
    }
    await this.checkUnique(body.username as string | undefined, body.email, objectId);

    const result = await this.core.store.transaction(async () => {
      let updated: Row;
      try {
        updated = await this.data.writes.update(accountCtx(auth), '_User', objectId, body, { internal });
      } catch (err) {
        const explained = await this.explainDuplicate(err, body.username as string | undefined, body.email);
        // Not the name or the email: the anonymous id's unique index (another user linked it meanwhile).
        const isDuplicate = explained instanceof BdsError && explained.code === ErrorCode.DUPLICATE_VALUE;
        throw isDuplicate && linksAnonymous ? alreadyLinked() : explained;
      }
      if (rotate) await this.revokeSessions(objectId);
      else if (password !== undefined && this.core.options.revokeSessionOnPasswordReset)
        await this.revokeSessions(objectId, { keep: auth.sessionToken });
      if (rotate) {
        // The anonymous upgrade: the old token (revoked above) is replaced by a new one.
        updated.sessionToken = await this.createSession(
          objectId,
          { action: 'upgrade', authProvider: 'password' },
          auth.installationId,
        );
      }
      return { ...updated, ...extra };
    });
    if (verifyToken) {
      const email = body.email as string;
      const username = (body.username ?? current.username) as string;
      const token = verifyToken;
      this.background(() => this.sendVerificationMail(email, username, token));
    }
    return result;
  }

  /** DELETE /users/<id>: own session (or master); the user's sessions go with the row. */
  async delete(auth: Caller, objectId: string): Promise<void> {
    demandOwnAccount(auth, 'delete', objectId);
    await this.core.store.transaction(async () => {
      await this.data.writes.delete(accountCtx(auth), '_User', objectId);
      await this.revokeSessions(objectId);
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers
  // ---------------------------------------------------------------------------------------------

  /**
   * Sets internal columns of a user (hashes, one-time tokens) through the pipeline, leaving
   * updatedAt alone. With `expect`, only while those columns still hold the given values (a
   * compare-and-set, for single-use tokens). Answers whether it wrote.
   */
  private async writeInternal(
    userId: string,
    values: Record<string, string | null>,
    expect?: Record<string, string | null>,
  ): Promise<boolean> {
    try {
      await this.data.writes.update(
        SYSTEM,
        '_User',
        userId,
        {},
        { internal: values, expectInternal: expect, touch: false },
      );
      return true;
    } catch (err) {
      if (err instanceof BdsError && err.code === ErrorCode.OBJECT_NOT_FOUND) return false;
      throw err;
    }
  }

  private checkWritableFields(auth: Caller, body: Record<string, unknown>): void {
    if ('sessionToken' in body)
      throw new BdsError(ErrorCode.INVALID_KEY_NAME, 'sessionToken cannot be written.');
    if (!auth.isMaster && 'emailVerified' in body) {
      throw forbidden("Clients aren't allowed to manually update email verification.");
    }
    for (const key of Object.keys(body)) {
      if (key.startsWith('authData.') || key.startsWith('password.')) {
        throw new BdsError(ErrorCode.INVALID_KEY_NAME, `${key} cannot be written; send authData as a whole.`);
      }
    }
  }

  private normaliseEmail(body: Record<string, unknown>): void {
    if (body.email === undefined || body.email === null) return;
    if (typeof body.email !== 'string' || !EMAIL.test(body.email)) {
      throw new BdsError(ErrorCode.INVALID_EMAIL_ADDRESS, 'Email address format is invalid.');
    }
    body.email = body.email.toLowerCase();
  }

  private async checkUnique(username: string | undefined, email: unknown, self?: string): Promise<void> {
    if (username !== undefined) {
      const rows = await this.data.lookups.internal('_User', 'username', username, []);
      if (rows.some((r) => r.objectId !== self)) {
        throw new BdsError(ErrorCode.USERNAME_TAKEN, 'Account already exists for this username.');
      }
    }
    if (typeof email === 'string') {
      const rows = await this.data.lookups.internal('_User', 'email', email, []);
      if (rows.some((r) => r.objectId !== self)) {
        throw new BdsError(ErrorCode.EMAIL_TAKEN, 'Account already exists for this email address.');
      }
    }
  }

  /** A unique-index violation (a concurrent sign-up won the race) as 202/203. */
  private async explainDuplicate(
    err: unknown,
    username: string | undefined,
    email: unknown,
  ): Promise<unknown> {
    if (!(err instanceof BdsError) || err.code !== ErrorCode.DUPLICATE_VALUE) return err;
    try {
      await this.checkUnique(username, email);
    } catch (explained) {
      return explained;
    }
    return err;
  }

  expiry(seconds: number): string {
    return new Date(Date.now() + seconds * 1000).toISOString();
  }

  private appPageUrl(page: string, token: string): string {
    const appId = encodeURIComponent(this.core.options.appId);
    return `${this.publicUrl()}/apps/${appId}/${page}?token=${token}`;
  }

  private async sendVerificationMail(email: string, username: string, token: string): Promise<void> {
    const link = this.appPageUrl('verify_email', token);
    await this.mailer.send({
      to: email,
      subject: `Please verify your email for ${this.core.options.appId}`,
      text: `Hi ${username},\n\nConfirm your email address by opening this link:\n${link}\n`,
      html: `<p>Hi ${escapeHtml(username)},</p><p>Confirm your email address: <a href="${escapeHtml(link)}">verify my email</a></p>`,
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Password reset and email verification
  // ---------------------------------------------------------------------------------------------

  private checkEmailParam(body: unknown): string {
    const email = isObject(body) ? body.email : undefined;
    if (email === undefined || email === null || email === '') {
      throw new BdsError(ErrorCode.EMAIL_MISSING, 'you must provide an email');
    }
    if (typeof email !== 'string' || !EMAIL.test(email)) {
      throw new BdsError(ErrorCode.INVALID_EMAIL_ADDRESS, 'Email address format is invalid.');
    }
    return email.toLowerCase();
  }

  /** POST /requestPasswordReset: always `{}`; the work (and the mail) happens after the answer. */
  requestPasswordReset(body: unknown): Record<string, never> {
    const email = this.checkEmailParam(body);
    this.background(async () => {
      const row = (await this.data.lookups.internal('_User', 'email', email, []))[0];
      if (!row) return;
      const token = randomBytes(32).toString('hex');
      await this.writeInternal(row.objectId as string, {
        [COL.resetToken]: tokenDigest(token),
        [COL.resetExpires]: this.expiry(this.core.options.passwordResetTokenValidity),
      });
      const link = this.appPageUrl('reset', token);
      await this.mailer.send({
        to: email,
        subject: `Password reset for ${this.core.options.appId}`,
        text: `Someone asked to reset the password of your account.\n\nSet a new password here (the link works once and expires):\n${link}\n\nIf it was not you, ignore this mail.\n`,
        html: `<p>Someone asked to reset the password of your account.</p><p><a href="${escapeHtml(link)}">Set a new password</a> (the link works once and expires).</p><p>If it was not you, ignore this mail.</p>`,
      });
    });
    return {};
  }

  /** POST /verificationEmailRequest: always `{}`; mails a new link to an unverified address. */
  requestVerificationEmail(body: unknown): Record<string, never> {
    const email = this.checkEmailParam(body);
    this.background(async () => {
      const found = await this.data.lookups.internal('_User', 'email', email, []);
      if (!found[0]) return;
      const userId = found[0].objectId as string;
      const row = await this.data.lookups.userById(userId);
      if (!row || row.emailVerified === true) return;
      const token = randomBytes(32).toString('hex');
      await this.writeInternal(userId, {
        [COL.verifyToken]: tokenDigest(token),
        [COL.verifyExpires]: this.expiry(this.core.options.emailVerifyTokenValidity),
      });
      await this.sendVerificationMail(email, row.username as string, token);
    });
    return {};
  }

  /** The user a one-time token (reset or verify) belongs to, when it is known and not expired. */
  async userForToken(
    kind: 'reset' | 'verify',
    token: string,
  ): Promise<{ objectId: string; digest: string } | undefined> {
    if (!/^[0-9a-f]{64}$/.test(token)) return undefined;
    const [tokenCol, expiresCol] =
      kind === 'reset' ? [COL.resetToken, COL.resetExpires] : [COL.verifyToken, COL.verifyExpires];
    const digest = tokenDigest(token);
    const row = (await this.data.lookups.internal('_User', tokenCol, digest, [expiresCol]))[0];
    if (!row) return undefined;
    const expires = Date.parse(String(row[expiresCol]));
    if (!Number.isFinite(expires) || expires <= Date.now()) return undefined;
    return { objectId: row.objectId as string, digest };
  }

  /** Sets a new password from a reset link: single use; every session of the user ends. */
  async resetPassword(token: string, password: string): Promise<boolean> {
    const user = await this.userForToken('reset', token);
    if (!user) return false;
    const hash = await hashPassword(password, this.core.options.passwordHashCost);
    return this.core.store.transaction(async () => {
      const done = await this.writeInternal(
        user.objectId,
        { [COL.hash]: hash, [COL.resetToken]: null, [COL.resetExpires]: null },
        { [COL.resetToken]: user.digest },
      );
      if (!done) return false;
      if (this.core.options.revokeSessionOnPasswordReset) await this.revokeSessions(user.objectId);
      await this.lockout.succeed(`user:${user.objectId}`);
      return true;
    });
  }

  /** Marks the email of a verification link's user verified: single use. */
  async verifyEmail(token: string): Promise<boolean> {
    const user = await this.userForToken('verify', token);
    if (!user) return false;
    try {
      await this.data.writes.update(
        SYSTEM,
        '_User',
        user.objectId,
        { emailVerified: true },
        {
          internal: { [COL.verifyToken]: null, [COL.verifyExpires]: null },
          expectInternal: { [COL.verifyToken]: user.digest },
        },
      );
      return true;
    } catch (err) {
      if (err instanceof BdsError && err.code === ErrorCode.OBJECT_NOT_FOUND) return false;
      throw err;
    }
  }
}

function anonymousIdOf(value: unknown): string {
  const id = isObject(value) ? value.id : undefined;
  if (typeof id !== 'string' || id.length < 1 || id.length > 256) {
    throw new BdsError(ErrorCode.INCORRECT_TYPE, 'authData.anonymous needs an id (a client-generated UUID).');
  }
  return id;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
