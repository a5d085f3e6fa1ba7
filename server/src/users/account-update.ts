import { isObject } from '@bds/client/protocol';
import { demandOwnAccount } from '../data/authorize.ts';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode, notFound } from '../kernel/errors.ts';
import type { Row } from '../kernel/records.ts';
import type { MailLinks } from './mail-links.ts';
import { enrol, mfaError } from './mfa.ts';
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
  forbidden,
  holdsNothingNew,
  normaliseEmail,
  notAnObject,
} from './shared.ts';
import type { UserRows } from './user-rows.ts';

/** What an update's `authData` changes beside the body: internal columns and the answer's extras. */
interface AuthDataChange {
  objectId: string;
  current: Row;
  currentInternal: Record<string, unknown>;
  body: Record<string, unknown>;
  internal: Record<string, string | null>;
  extra: Row;
}

/**
 * A user's own account (docs/protocol.md#users-and-sessions): PUT /users/<id> (password, names,
 * email, authData links and MFA enrolment, the anonymous upgrade) and DELETE /users/<id>.
 */
export class AccountUpdates {
  private readonly core: Core;

  constructor(
    private readonly data: Data,
    private readonly rows: UserRows,
    private readonly sessions: Sessions,
    private readonly mailLinks: MailLinks,
    private readonly providers: AuthProviders,
  ) {
    this.core = data.core;
  }

  /** PUT /users/<id>: own session (or master) only; password changes revoke the other sessions. */
  async update(auth: Caller, objectId: string, raw: unknown, via?: AccountVia): Promise<Row> {
    // Before the body is read: another caller learns nothing about the row or the names taken.
    demandOwnAccount(auth, 'update', objectId);
    if (!isObject(raw)) throw notAnObject();
    const body: Record<string, unknown> = { ...raw };
    const password = body.password;
    delete body.password;
    checkWritableFields(auth, body);
    const current = await this.data.lookups.userById(objectId);
    if (!current) throw notFound();
    const currentInternal = (await this.rows.internalColumns(objectId, [COL.anonymousId, COL.mfa])) ?? {};
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
    normaliseEmail(body);

    const linksAnonymous =
      body.authData !== undefined &&
      (await this.changeAuthData(auth, { objectId, current, currentInternal, body, internal, extra }));
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
      const minted = this.mailLinks.mintToken('verify');
      verifyToken = minted.token;
      Object.assign(internal, minted.columns);
    }
    await this.rows.checkUnique(body.username as string | undefined, body.email, objectId);

    const result = await this.core.store.transaction(async () => {
      let updated: Row;
      try {
        updated = await this.data.writes.update(accountCtx(auth, via), '_User', objectId, body, { internal });
      } catch (err) {
        const explained = await this.rows.explainDuplicate(
          err,
          body.username as string | undefined,
          body.email,
        );
        // Not the name or the email: the anonymous id's unique index (another user linked it meanwhile).
        const isDuplicate = explained instanceof BdsError && explained.code === ErrorCode.DUPLICATE_VALUE;
        throw isDuplicate && linksAnonymous ? alreadyLinked() : explained;
      }
      if (rotate) await this.sessions.revoke(objectId);
      else if (password !== undefined && this.core.options.revokeSessionOnPasswordReset)
        await this.sessions.revoke(objectId, { keep: auth.sessionToken });
      if (rotate) {
        // The anonymous upgrade: the old token (revoked above) is replaced by a new one.
        updated.sessionToken = await this.sessions.create(
          objectId,
          { action: 'upgrade', authProvider: 'password' },
          auth.installationId,
        );
      }
      return { ...updated, ...extra };
    });
    if (verifyToken) {
      const username = (body.username ?? current.username) as string;
      this.mailLinks.mailVerificationLink(body.email as string, username, verifyToken);
    }
    return result;
  }

  /**
   * The `authData` of an update (`change.body.authData`, defined) merged into the stored one: MFA
   * enrolled or removed, the anonymous id linked or unlinked, provider payloads checked and linked
   * or unlinked. Answers whether it links an anonymous id (a later duplicate then means 208).
   */
  private async changeAuthData(auth: Caller, change: AuthDataChange): Promise<boolean> {
    const { objectId, current, currentInternal, body, internal, extra } = change;
    let linksAnonymous = false;
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
        } else if (isObject(value) && holdsNothingNew(value, merged.anonymous)) {
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
        if (holdsNothingNew(payload, merged[provider])) continue;
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
    await this.providers.checkPayloads(
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
    return linksAnonymous;
  }

  /** DELETE /users/<id>: own session (or master); the user's sessions go with the row. */
  async delete(auth: Caller, objectId: string, via?: AccountVia): Promise<void> {
    demandOwnAccount(auth, 'delete', objectId);
    await this.core.store.transaction(async () => {
      await this.data.writes.delete(accountCtx(auth, via), '_User', objectId);
      await this.sessions.revoke(objectId);
    });
  }
}
