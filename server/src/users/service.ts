import { createHash, randomBytes } from 'node:crypto';
import { type Auth, MASTER } from '../data/auth.ts';
import type { Core } from '../data/core.ts';
import type { Records } from '../data/records.ts';
import { findSessionByToken } from '../data/sessions.ts';
import type { MailAdapter } from '../email/adapter.ts';
import { BdsError, ErrorCode, notFound } from '../errors.ts';
import type { QueryNode } from '../query/ast.ts';
import type { Row } from '../storage/adapter.ts';
import { newObjectId, newSessionToken } from '../util/ids.ts';
import { Lockout } from './lockout.ts';
import { enrol, mfaError, type StoredMfa, verify as verifyMfa } from './mfa.ts';
import { hashPassword, verifyPassword } from './passwords.ts';

/** Internal _User columns: not schema fields, so no read ever returns them. */
export const COL = {
  hash: '_hashed_password',
  anonymousId: '_auth_anonymous_id',
  mfa: '_mfa',
  resetToken: '_perishable_token',
  resetExpires: '_perishable_token_expires_at',
  verifyToken: '_email_verify_token',
  verifyExpires: '_email_verify_token_expires_at',
} as const;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const pointer = (objectId: string) => ({ __type: 'Pointer', className: '_User', objectId });
const userScope = (objectId: string): QueryNode => ({
  type: 'compare',
  path: ['user'],
  op: 'eq',
  value: pointer(objectId),
});

export const invalidSession = () => new BdsError(ErrorCode.INVALID_SESSION_TOKEN, 'Invalid session token');
const badLogin = () => new BdsError(ErrorCode.OBJECT_NOT_FOUND, 'Invalid username/password.');
const forbidden = (message: string) => new BdsError(ErrorCode.OPERATION_FORBIDDEN, message);

/** SHA-256 of a one-time token: the store keeps digests, so a copy of the database opens no account. */
export const tokenDigest = (token: string) => createHash('sha256').update(token).digest('hex');

export type CreatedWith = { action: 'signup' | 'login' | 'upgrade'; authProvider: string };

/**
 * Users and sessions (SPEC "Built-in classes", "States and transitions"): sign-up, login, MFA,
 * logout, session scoping, user updates, anonymous users and their upgrade, and mail-based flows.
 * Every write still goes through the records pipeline; this module adds the _User/_Session rules.
 */
export class Users {
  readonly lockout: Lockout;
  /** Background work (mail) still running; awaited on close. */
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly core: Core,
    private readonly records: Records,
    readonly mailer: MailAdapter,
    readonly publicUrl: () => string,
  ) {
    this.lockout = new Lockout(core.options.accountLockout);
  }

  async init(): Promise<void> {
    await this.core.store.ensureInternalColumns('_User', Object.values(COL), {
      unique_username: ['username'],
      unique_email: ['email'],
      unique_anonymous: [COL.anonymousId],
    });
    await this.core.store.ensureInternalColumns('_Session', [], { unique_sessionToken: ['sessionToken'] });
  }

  /** Runs `work` after the answer is sent (mail), so timing tells nothing; errors are logged without data. */
  background(work: () => Promise<void>): void {
    const p = work()
      .catch((err: unknown) => {
        console.error('[bds] background mail task failed:', err instanceof Error ? err.message : 'error');
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

  private get userSchema() {
    return this.core.schemas.get('_User')!;
  }

  private async internalOf(
    objectId: string,
    columns: string[],
  ): Promise<Record<string, unknown> | undefined> {
    return (await this.core.store.findInternal('_User', 'objectId', objectId, columns))[0];
  }

  /** The caller's own row in full (GET /users/me, sign-up and login answers): never the password. */
  async ownRow(objectId: string): Promise<Row> {
    const rows = await this.core.store.getMany(this.userSchema, [objectId], null);
    const row = rows[0];
    if (!row) throw invalidSession();
    delete row.password;
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
    await this.records.create(MASTER, '_Session', body);
    return sessionToken;
  }

  /** Deletes a user's sessions, except the one with token `keep`; only those of `installationId` when given. */
  async revokeSessions(
    userId: string,
    opts: { keep?: string | null; installationId?: string } = {},
  ): Promise<void> {
    const schema = this.core.schemas.get('_Session')!;
    const children: QueryNode[] = [userScope(userId)];
    if (opts.installationId)
      children.push({ type: 'compare', path: ['installationId'], op: 'eq', value: opts.installationId });
    const rows = await this.core.store.find(
      schema,
      { where: { type: 'and', children }, order: [], limit: 100_000, skip: 0, readers: null },
      this.core.schemas.lookup,
    );
    for (const row of rows) {
      if (opts.keep && row.sessionToken === opts.keep) continue;
      await this.core.store.delete(schema, row.objectId as string, null);
    }
  }

  private sessionByToken(token: string): Promise<Row | undefined> {
    return findSessionByToken(this.core, token);
  }

  private requireSession(auth: Auth): { userId: string; token: string } {
    if (!auth.user || !auth.sessionToken) {
      throw new BdsError(
        ErrorCode.INVALID_SESSION_TOKEN,
        'Session token required: send X-Backend-Session-Token.',
      );
    }
    return { userId: auth.user.objectId, token: auth.sessionToken };
  }

  /** POST /logout: the token stops working. Without a token there is nothing to end. */
  async logOut(auth: Auth): Promise<Record<string, never>> {
    if (auth.sessionToken) {
      const session = await this.sessionByToken(auth.sessionToken);
      if (session)
        await this.core.store.delete(this.core.schemas.get('_Session')!, session.objectId as string, null);
    }
    return {};
  }

  async me(auth: Auth): Promise<Row> {
    const { userId, token } = this.requireSession(auth);
    return { ...(await this.ownRow(userId)), sessionToken: token };
  }

  async sessionMe(auth: Auth): Promise<Row> {
    const { token } = this.requireSession(auth);
    const session = await this.sessionByToken(token);
    if (!session) throw invalidSession();
    return session;
  }

  /** GET /sessions: master sees all; a user only their own (the query is rewritten). */
  async findSessions(auth: Auth, params: Record<string, unknown>) {
    if (auth.isMaster) return this.records.find(auth, '_Session', params);
    const { userId } = this.requireSession(auth);
    return this.records.find(auth, '_Session', params, { scope: userScope(userId) });
  }

  async getSession(auth: Auth, objectId: string, params: Record<string, unknown>): Promise<Row> {
    if (auth.isMaster) return this.records.get(auth, '_Session', objectId, params);
    const { userId } = this.requireSession(auth);
    const row = await this.records.get(auth, '_Session', objectId, params, {});
    if ((row.user as { objectId?: string } | undefined)?.objectId !== userId) throw notFound();
    return row;
  }

  /** DELETE /sessions/<id>: revokes it; a user may revoke only their own sessions. */
  async deleteSession(auth: Auth, objectId: string): Promise<void> {
    if (auth.isMaster) return this.records.delete(auth, '_Session', objectId);
    await this.getSession(auth, objectId, {});
    await this.records.delete(auth, '_Session', objectId, {});
  }

  // ---------------------------------------------------------------------------------------------
  // Sign-up and login
  // ---------------------------------------------------------------------------------------------

  /**
   * POST /users. Answers `created: false` (HTTP 200) when an anonymous id that already has a user
   * logs in again.
   */
  async signUp(auth: Auth, raw: unknown): Promise<{ created: boolean; body: Row }> {
    if (!isObject(raw)) throw new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');
    const body: Record<string, unknown> = { ...raw };
    const password = body.password;
    delete body.password;
    this.checkWritableFields(auth, body);
    const internal: Record<string, string | null> = {};

    let anonymousId: string | undefined;
    if (body.authData !== undefined) {
      const authData = body.authData;
      if (!isObject(authData)) throw new BdsError(ErrorCode.INCORRECT_TYPE, 'authData must be an object.');
      for (const [provider, value] of Object.entries(authData)) {
        if (provider === 'anonymous') {
          anonymousId = anonymousIdOf(value);
        } else if (provider === 'mfa') {
          // Only as the second factor of an anonymous login (checked below); enrolment is a PUT.
        } else if (!auth.isMaster) {
          throw unsupportedProvider(provider);
        }
      }
      if (anonymousId !== undefined) {
        const existing = await this.core.store.findInternal('_User', COL.anonymousId, anonymousId, [COL.mfa]);
        if (existing[0]) {
          const userId = existing[0].objectId as string;
          // An enrolled user needs the second factor on every login path, the anonymous id included.
          await this.checkMfa(existing[0], authData, `user:${userId}`);
          return { created: false, body: await this.startSession(userId, 'login', 'anonymous', auth) };
        }
        internal[COL.anonymousId] = anonymousId;
      }
      if ('mfa' in authData) throw mfaError('MFA is enrolled after sign-up, with PUT /users/<objectId>.');
    }

    if (anonymousId !== undefined && body.username === undefined) {
      body.username = newObjectId(25).toLowerCase();
    }
    if (typeof body.username !== 'string' || body.username.trim() === '') {
      throw new BdsError(ErrorCode.USERNAME_MISSING, 'bad or missing username');
    }
    body.username = body.username.toLowerCase();
    if (password !== undefined || (!auth.isMaster && anonymousId === undefined)) {
      if (typeof password !== 'string' || password === '') {
        throw new BdsError(ErrorCode.PASSWORD_MISSING, 'password is required');
      }
      internal[COL.hash] = await hashPassword(password);
    }
    this.normaliseEmail(body);

    const objectId = newObjectId();
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
    const loginCapable = typeof internal[COL.hash] === 'string' || anonymousId !== undefined;
    const answer = await this.core.store.transaction(async () => {
      try {
        await this.records.create(auth, '_User', body, { objectId, internal });
      } catch (err) {
        throw await this.explainDuplicate(err, body.username as string, body.email);
      }
      if (!loginCapable) return this.ownRow(objectId);
      return this.startSession(
        objectId,
        'signup',
        anonymousId !== undefined ? 'anonymous' : 'password',
        auth,
      );
    });
    if (verifyToken) {
      const email = body.email as string;
      const token = verifyToken;
      this.background(() => this.sendVerificationMail(email, body.username as string, token));
    }
    return { created: true, body: answer };
  }

  private async startSession(
    userId: string,
    action: CreatedWith['action'],
    authProvider: string,
    auth: Auth,
  ): Promise<Row> {
    if (auth.installationId) await this.revokeSessions(userId, { installationId: auth.installationId });
    const sessionToken = await this.createSession(userId, { action, authProvider }, auth.installationId);
    return { ...(await this.ownRow(userId)), sessionToken };
  }

  /** POST /login and GET /login. */
  async logIn(auth: Auth, params: Record<string, unknown>): Promise<Row> {
    const { username, email, password } = params;
    let authData = params.authData;
    if (typeof authData === 'string') {
      try {
        authData = JSON.parse(authData);
      } catch {
        throw new BdsError(ErrorCode.INVALID_JSON, 'authData must be a JSON object.');
      }
    }
    if ((typeof username !== 'string' || !username) && (typeof email !== 'string' || !email)) {
      throw new BdsError(ErrorCode.USERNAME_MISSING, 'username/email is required.');
    }
    if (typeof password !== 'string' || password === '') {
      throw new BdsError(ErrorCode.PASSWORD_MISSING, 'password is required.');
    }
    const field = typeof username === 'string' && username ? 'username' : 'email';
    const name = (field === 'username' ? (username as string) : (email as string)).toLowerCase();
    const row = (await this.core.store.findInternal('_User', field, name, [COL.hash, COL.mfa]))[0];
    const key = row ? `user:${row.objectId as string}` : `${field}:${name}`;
    this.lockout.check(key);
    const ok = await verifyPassword(password, row?.[COL.hash] as string | undefined);
    if (!ok || !row) {
      this.lockout.fail(key);
      throw badLogin();
    }
    const userId = row.objectId as string;
    await this.checkMfa(row, authData, key);
    this.lockout.succeed(key);
    return this.startSession(userId, 'login', 'password', auth);
  }

  /** The second factor of an enrolled user (`row` carries COL.mfa): 211 without a token, 210 for a wrong one. */
  private async checkMfa(row: Record<string, unknown>, authData: unknown, key: string): Promise<void> {
    if (!row[COL.mfa]) return;
    this.lockout.check(key);
    const userId = row.objectId as string;
    const stored = JSON.parse(row[COL.mfa] as string) as StoredMfa;
    const token = isObject(authData) && isObject(authData.mfa) ? authData.mfa.token : undefined;
    if (token === undefined || token === null || token === '') {
      throw new BdsError(ErrorCode.MFA_TOKEN_REQUIRED, 'Missing additional authData mfa.token.');
    }
    const check = typeof token === 'string' ? verifyMfa(stored, token) : { ok: false };
    if (!check.ok) {
      this.lockout.fail(key);
      throw mfaError();
    }
    if (check.usedRecovery) {
      const next: StoredMfa = {
        ...stored,
        recovery: stored.recovery.filter((h) => h !== check.usedRecovery),
      };
      // Compare-and-set: two logins with the same recovery code cannot both succeed.
      const used = await this.core.store.writeInternal(
        '_User',
        userId,
        { [COL.mfa]: JSON.stringify(next) },
        { [COL.mfa]: row[COL.mfa] },
      );
      if (!used) throw mfaError();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Updates and deletes
  // ---------------------------------------------------------------------------------------------

  /** PUT /users/<id>: own session (or master) only; password changes revoke the other sessions. */
  async update(auth: Auth, objectId: string, raw: unknown): Promise<Row> {
    if (!auth.isMaster && auth.user?.objectId !== objectId) {
      throw new BdsError(ErrorCode.SESSION_MISSING, `Insufficient auth to update user ${objectId}.`);
    }
    if (!isObject(raw)) throw new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');
    const body: Record<string, unknown> = { ...raw };
    const password = body.password;
    delete body.password;
    this.checkWritableFields(auth, body);
    const current = (await this.core.store.getMany(this.userSchema, [objectId], null))[0];
    if (!current) throw notFound();
    const currentInternal = (await this.internalOf(objectId, [COL.anonymousId, COL.mfa])) ?? {};
    const internal: Record<string, string | null> = {};
    const extra: Row = {};

    if (password !== undefined) {
      if (typeof password !== 'string' || password === '') {
        throw new BdsError(ErrorCode.PASSWORD_MISSING, 'password cannot be empty.');
      }
      internal[COL.hash] = await hashPassword(password);
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

    if (body.authData !== undefined) {
      const authData = body.authData;
      if (authData !== null && !isObject(authData))
        throw new BdsError(ErrorCode.INCORRECT_TYPE, 'authData must be an object.');
      const merged: Record<string, unknown> = isObject(current.authData) ? { ...current.authData } : {};
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
          } else if (auth.isMaster) {
            const id = anonymousIdOf(value);
            merged.anonymous = { id };
            internal[COL.anonymousId] = id;
          } else {
            throw forbidden('An anonymous id can only be linked at sign-up.');
          }
        } else if (!auth.isMaster) {
          throw unsupportedProvider(provider);
        } else if (value === null) {
          delete merged[provider];
        } else {
          merged[provider] = value;
        }
      }
      if (authData === null) {
        if (!auth.isMaster) throw forbidden('Only the master key can clear authData.');
        for (const k of Object.keys(merged)) delete merged[k];
        internal[COL.anonymousId] = null;
      }
      body.authData = Object.keys(merged).length ? merged : null;
    }

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
        updated = await this.records.update(auth, '_User', objectId, body, { internal });
      } catch (err) {
        throw await this.explainDuplicate(err, body.username as string | undefined, body.email);
      }
      if (password !== undefined)
        await this.revokeSessions(objectId, { keep: rotate ? null : auth.sessionToken });
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
  async delete(auth: Auth, objectId: string): Promise<void> {
    if (!auth.isMaster && auth.user?.objectId !== objectId) {
      throw new BdsError(ErrorCode.SESSION_MISSING, `Insufficient auth to delete user ${objectId}.`);
    }
    await this.core.store.transaction(async () => {
      await this.records.delete(auth, '_User', objectId, {});
      await this.revokeSessions(objectId);
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers
  // ---------------------------------------------------------------------------------------------

  private checkWritableFields(auth: Auth, body: Record<string, unknown>): void {
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
      const rows = await this.core.store.findInternal('_User', 'username', username, []);
      if (rows.some((r) => r.objectId !== self)) {
        throw new BdsError(ErrorCode.USERNAME_TAKEN, 'Account already exists for this username.');
      }
    }
    if (typeof email === 'string') {
      const rows = await this.core.store.findInternal('_User', 'email', email, []);
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
      const row = (await this.core.store.findInternal('_User', 'email', email, []))[0];
      if (!row) return;
      const token = randomBytes(32).toString('hex');
      await this.core.store.writeInternal('_User', row.objectId as string, {
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
      const found = await this.core.store.findInternal('_User', 'email', email, []);
      if (!found[0]) return;
      const userId = found[0].objectId as string;
      const row = (await this.core.store.getMany(this.userSchema, [userId], null))[0];
      if (!row || row.emailVerified === true) return;
      const token = randomBytes(32).toString('hex');
      await this.core.store.writeInternal('_User', userId, {
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
    const row = (await this.core.store.findInternal('_User', tokenCol, digest, [expiresCol]))[0];
    if (!row) return undefined;
    const expires = Date.parse(String(row[expiresCol]));
    if (!Number.isFinite(expires) || expires <= Date.now()) return undefined;
    return { objectId: row.objectId as string, digest };
  }

  /** Sets a new password from a reset link: single use; every session of the user ends. */
  async resetPassword(token: string, password: string): Promise<boolean> {
    const user = await this.userForToken('reset', token);
    if (!user) return false;
    const hash = await hashPassword(password);
    return this.core.store.transaction(async () => {
      const done = await this.core.store.writeInternal(
        '_User',
        user.objectId,
        { [COL.hash]: hash, [COL.resetToken]: null, [COL.resetExpires]: null },
        { [COL.resetToken]: user.digest },
      );
      if (!done) return false;
      await this.revokeSessions(user.objectId);
      this.lockout.succeed(`user:${user.objectId}`);
      return true;
    });
  }

  /** Marks the email of a verification link's user verified: single use. */
  async verifyEmail(token: string): Promise<boolean> {
    const user = await this.userForToken('verify', token);
    if (!user) return false;
    return this.core.store.transaction(async () => {
      const done = await this.core.store.writeInternal(
        '_User',
        user.objectId,
        { [COL.verifyToken]: null, [COL.verifyExpires]: null },
        { [COL.verifyToken]: user.digest },
      );
      if (!done) return false;
      await this.records.update(MASTER, '_User', user.objectId, { emailVerified: true });
      return true;
    });
  }
}

function anonymousIdOf(value: unknown): string {
  const id = isObject(value) ? value.id : undefined;
  if (typeof id !== 'string' || id.length < 1 || id.length > 256) {
    throw new BdsError(ErrorCode.INCORRECT_TYPE, 'authData.anonymous needs an id (a client-generated UUID).');
  }
  return id;
}

function unsupportedProvider(provider: string): BdsError {
  return forbidden(`This authentication method is unsupported: ${provider}.`);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
