import { Secret, TOTP } from 'otpauth';
import { expect } from 'vitest';
import { MASTER } from '../../src/kernel/caller.ts';
import { COL } from '../../src/users/shared.ts';
import type { TestService } from './service.ts';

/** Signs `username` up with `password` and expects 201; its objectId and session token. */
export async function signUpUser(t: TestService, username: string, password: string) {
  const res = await t.request('POST', '/users', { body: { username, password } });
  expect(res.status, res.text).toBe(201);
  return res.json as { objectId: string; sessionToken: string };
}

/** POST /login with a username and password. */
export const logInUser = (t: TestService, username: string, password: string) =>
  t.request('POST', '/login', { body: { username, password } });

/** A fresh TOTP secret (base32) and the function that gives its current code. */
export function newTotp() {
  const secret = new Secret({ size: 20 }).base32;
  const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
  return { secret, code: () => totp.generate() };
}

/** Refusals of the user routes: the exact code and text each answers. */
export const refusal = (code: number, error: string) => ({ code, error });
export const BAD_LOGIN = refusal(101, 'Invalid username/password.');
export const lockedFor = (minutes: number) =>
  refusal(
    101,
    `Your account is locked due to multiple failed login attempts. Please try again after ${minutes} minute(s).`,
  );
export const NOT_OBJECT = refusal(107, 'The request body must be a JSON object.');
export const BAD_USERNAME = refusal(200, 'bad or missing username');
export const BAD_EMAIL = refusal(125, 'Email address format is invalid.');
export const BAD_AUTHDATA = refusal(111, 'authData must be an object.');
export const BAD_ANON = refusal(111, 'authData.anonymous needs an id (a client-generated UUID).');

/** Replaces the stored password hash of `userId` (as a store written by another version or an import might hold it). */
export async function storeHash(t: TestService, userId: string, hash: string): Promise<void> {
  await t.service.data.writes.update(
    { caller: MASTER, source: 'account', context: {} },
    '_User',
    userId,
    {},
    { internal: { [COL.hash]: hash }, touch: false },
  );
}

/** The stored password hash of `userId`. */
export async function storedHash(t: TestService, userId: string): Promise<string> {
  const rows = await t.service.data.lookups.internal('_User', 'objectId', userId, [COL.hash]);
  return rows[0]![COL.hash] as string;
}
