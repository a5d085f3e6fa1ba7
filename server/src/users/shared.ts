import { createHash, randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { isObject } from '@bds/client/protocol';
import { type Caller, MASTER } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import { USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';

/**
 * What the parts of the account rules (sign-up, login, sessions, updates, mail links) share: the
 * internal columns, the account context, the refusals and the field checks, each in one place.
 */

/** Internal _User columns (created by the store's migrations). */
export const COL = USER_INTERNAL_COLUMNS;

export type CreatedWith = { action: 'signup' | 'login' | 'upgrade'; authProvider: string };

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export const isEmailAddress = (value: unknown): value is string =>
  typeof value === 'string' && EMAIL.test(value);

export const userPointer = (objectId: string) => ({ __type: 'Pointer', className: '_User', objectId });

/**
 * What an account write keeps of the request that asked for it: its trace id and the console user
 * it was made for (the row history records them).
 */
export type AccountVia = Pick<Ctx, 'requestId' | 'consoleUser'>;

/** A call made through the account rules, with the caller's authority or the service's own (MASTER). */
export const accountCtx = (caller: Caller, via?: AccountVia): Ctx => {
  const ctx: { -readonly [K in keyof Ctx]: Ctx[K] } = { caller, source: 'account', context: {} };
  if (via?.requestId !== undefined) ctx.requestId = via.requestId;
  if (via?.consoleUser !== undefined) ctx.consoleUser = via.consoleUser;
  return ctx;
};
export const SYSTEM = accountCtx(MASTER);

export const forbidden = (message: string) => new BdsError(ErrorCode.OPERATION_FORBIDDEN, message);
export const alreadyLinked = () =>
  new BdsError(ErrorCode.ACCOUNT_ALREADY_LINKED, 'this auth is already used');
export const notAnObject = () =>
  new BdsError(ErrorCode.INVALID_JSON, 'The request body must be a JSON object.');

/** Whether a provider payload sent again holds nothing new: each of its keys as stored (the incumbent's rule). */
export const holdsNothingNew = (sent: Record<string, unknown>, stored: unknown): boolean =>
  isObject(stored) && Object.keys(sent).every((key) => isDeepStrictEqual(sent[key], stored[key]));

/** A one-time token (reset or verification link): 32 random bytes in hex. */
export const newOneTimeToken = () => randomBytes(32).toString('hex');

/** SHA-256 of a one-time token: the store keeps digests, so a copy of the database opens no account. */
export const tokenDigest = (token: string) => createHash('sha256').update(token).digest('hex');

/** The ISO date `seconds` from now. */
export const expiresIn = (seconds: number): string => new Date(Date.now() + seconds * 1000).toISOString();

/** The id of an `authData.anonymous` payload (a client-generated UUID). */
export function anonymousIdOf(value: unknown): string {
  const id = isObject(value) ? value.id : undefined;
  if (typeof id !== 'string' || id.length < 1 || id.length > 256) {
    throw new BdsError(ErrorCode.INCORRECT_TYPE, 'authData.anonymous needs an id (a client-generated UUID).');
  }
  return id;
}

/** The fields of a sign-up or update body no caller writes that way (the master key alone sets emailVerified). */
export function checkWritableFields(auth: Caller, body: Record<string, unknown>): void {
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

/** A body's email, when it sends one, checked and lowercased in place. */
export function normaliseEmail(body: Record<string, unknown>): void {
  if (body.email === undefined || body.email === null) return;
  if (!isEmailAddress(body.email)) {
    throw new BdsError(ErrorCode.INVALID_EMAIL_ADDRESS, 'Email address format is invalid.');
  }
  body.email = body.email.toLowerCase();
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
