import { isDeepStrictEqual } from 'node:util';
import { isObject } from '@bds/client/protocol';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import { mayChooseObjectId, takeChosenObjectId } from '../data/write-body.ts';
import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import { newObjectId } from '../kernel/ids.ts';
import type { Row } from '../kernel/records.ts';
import type { Logins } from './login.ts';
import type { MailLinks } from './mail-links.ts';
import { mfaError } from './mfa.ts';
import { hashPassword } from './passwords.ts';
import { type AuthProviders, providerPayload, unsupportedService } from './providers.ts';
import type { Sessions } from './sessions.ts';
import {
  type AccountVia,
  accountCtx,
  alreadyLinked,
  anonymousIdOf,
  COL,
  checkWritableFields,
  holdsNothingNew,
  normaliseEmail,
  notAnObject,
  SYSTEM,
} from './shared.ts';
import type { UserRows } from './user-rows.ts';

/** Fields a sign-up answer leaves out even when the service set them (the incumbent's answer). */
const NOT_ECHOED = new Set(['objectId', 'createdAt', 'updatedAt', 'ACL', 'authData', 'sessionToken']);

/** What a body's `authData` asks of the account rules at sign-up (anonymous and provider links). */
interface SignInLinks {
  anonymousId: string | undefined;
  /** Provider payloads to link, by provider (null entries dropped). */
  providers: Map<string, Record<string, unknown>>;
}

/**
 * POST /users (docs/protocol.md#users-and-sessions): a sign-up, or a sign-in with `authData`
 * (the built-in `anonymous` or a provider) whose id already belongs to a user.
 */
export class SignUps {
  private readonly core: Core;

  constructor(
    private readonly data: Data,
    private readonly rows: UserRows,
    private readonly sessions: Sessions,
    private readonly logins: Logins,
    private readonly mailLinks: MailLinks,
    private readonly providers: AuthProviders,
  ) {
    this.core = data.core;
  }

  /**
   * A sign-up, or a sign-in with `authData` (anonymous or a provider) whose id already belongs to
   * a user, which answers `created: false` (HTTP 200) with the user's row and a new session. A
   * sign-up answers what the incumbent answers: `objectId`, `createdAt`, the session token, and the
   * fields stored otherwise than sent (a lowercased or chosen username, a lowercased email,
   * `emailVerified: false` with verifyUserEmails, a File's url, what a beforeSave changed).
   */
  async signUp(
    auth: Caller,
    raw: unknown,
    ip: string | null = null,
    via?: AccountVia,
  ): Promise<{ created: boolean; body: Row }> {
    if (!isObject(raw)) throw notAnObject();
    const chosen = takeChosenObjectId(raw, mayChooseObjectId(auth.isMaster, this.core.options));
    const body: Record<string, unknown> = { ...(chosen.body as Record<string, unknown>) };
    const password = body.password;
    delete body.password;
    checkWritableFields(auth, body);
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
        await this.providers.checkPayloads(auth, links.providers, 'validateLogin', owner, ip);
        if (!owner) throw alreadyLinked();
        return { created: false, body: await this.signInLinked(auth, owner, links, authData, ip) };
      }
      await this.providers.checkPayloads(auth, links.providers, 'validateSetUp', undefined, ip);
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
    normaliseEmail(body);

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
        const minted = this.mailLinks.mintToken('verify');
        verifyToken = minted.token;
        Object.assign(internal, minted.columns);
      }
    }
    await this.rows.checkUnique(body.username as string, body.email);
    // A session for whoever can sign in: by password (once the email is verified, with
    // preventLoginWithUnverifiedEmail), by an anonymous id or a provider.
    const signsIn =
      signInProvider !== undefined ||
      (typeof internal[COL.hash] === 'string' && !this.logins.loginWaitsForEmail(body.emailVerified));
    const answer = await this.core.store.transaction(async () => {
      let created: Row;
      try {
        created = await this.data.writes.create(accountCtx(auth, via), '_User', body, {
          objectId,
          internal,
        });
      } catch (err) {
        throw await this.rows.explainDuplicate(err, body.username as string, body.email);
      }
      // The fields stored otherwise than sent come back (the SDKs keep what they sent).
      const row = await this.rows.ownRow(objectId);
      for (const [field, value] of Object.entries(row)) {
        if (!NOT_ECHOED.has(field) && !isDeepStrictEqual(value, raw[field])) created[field] = value;
      }
      if (!signsIn) return created;
      const sessionToken = await this.sessions.createForCaller(
        objectId,
        'signup',
        signInProvider ?? 'password',
        auth,
      );
      return { ...created, sessionToken };
    });
    if (verifyToken)
      this.mailLinks.mailVerificationLink(body.email as string, body.username as string, verifyToken);
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
    const internal = (await this.rows.internalColumns(userId, [COL.mfa])) ?? {};
    // An enrolled user needs the second factor on every login path, the anonymous id included.
    await this.logins.checkSecondFactor({ ...internal, objectId: userId }, authData, `user:${userId}`);
    const current: Record<string, unknown> = isObject(user.authData) ? { ...user.authData } : {};
    let changed = false;
    for (const [provider, payload] of links.providers) {
      if (holdsNothingNew(payload, current[provider])) continue;
      current[provider] = payload;
      changed = true;
    }
    const provider =
      links.anonymousId !== undefined ? 'anonymous' : [...links.providers.keys()].sort().join(',');
    // A new payload is stored once beforeLogin let the login through (a refused login changes nothing).
    return this.logins.complete(auth, userId, provider, ip, async () => {
      if (changed) await this.data.writes.update(SYSTEM, '_User', userId, { authData: current });
    });
  }
}
