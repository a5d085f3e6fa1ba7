import { isObject } from '@bds/client/protocol';
import { invalidSession } from '../auth/caller.ts';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import { fillFileUrls } from '../data/file-urls.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Row } from '../kernel/records.ts';
import { COL, SYSTEM } from './shared.ts';

/**
 * The _User rows as the account rules read and write them beside the pipeline's own checks: the
 * caller's own row, the internal columns (hashes, one-time tokens, MFA), and the unique names.
 */
export class UserRows {
  private readonly core: Core;

  constructor(private readonly data: Data) {
    this.core = data.core;
  }

  /** The internal columns `columns` of a user (undefined when there is no such user). */
  async internalColumns(objectId: string, columns: string[]): Promise<Record<string, unknown> | undefined> {
    return (await this.data.lookups.internal('_User', 'objectId', objectId, columns))[0];
  }

  /** The caller's own row in full (GET /users/me, sign-up and login answers): never the password. */
  async ownRow(objectId: string): Promise<Row> {
    const row = await this.data.lookups.userById(objectId);
    if (!row) throw invalidSession();
    delete row.password;
    fillFileUrls(this.core, this.core.schemas.get('_User')!, [row]);
    const internal = await this.internalColumns(objectId, [COL.mfa]);
    if (internal?.[COL.mfa])
      row.authData = { ...(isObject(row.authData) ? row.authData : {}), mfa: { status: 'enabled' } };
    return row;
  }

  /**
   * Sets internal columns of a user (hashes, one-time tokens) through the pipeline, leaving
   * updatedAt alone. With `expect`, only while those columns still hold the given values (a
   * compare-and-set, for single-use tokens). Answers whether it wrote.
   */
  async writeInternal(
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

  /** 202 when another user (not `self`) has the username, 203 when another has the email. */
  async checkUnique(username: string | undefined, email: unknown, self?: string): Promise<void> {
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
  async explainDuplicate(err: unknown, username: string | undefined, email: unknown): Promise<unknown> {
    if (!(err instanceof BdsError) || err.code !== ErrorCode.DUPLICATE_VALUE) return err;
    try {
      await this.checkUnique(username, email);
    } catch (explained) {
      return explained;
    }
    return err;
  }
}
