import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { BdsError, ErrorCode } from '../kernel/errors.ts';

/** What is kept (in an internal column) for an enrolled user. */
export interface StoredMfa {
  secret: string;
  /** SHA-256 (hex) of each unused recovery code. */
  recovery: string[];
}

const RECOVERY_CODES = 10;

export const mfaError = (message = 'Invalid MFA token.') => new BdsError(ErrorCode.MFA_ERROR, message);

function totpFor(secret: string): TOTP {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
}

/** True when `token` is the current TOTP code (one step either side allowed for clock drift). */
export function checkTotp(secret: string, token: string): boolean {
  if (!/^\d{6}$/.test(token)) return false;
  return totpFor(secret).validate({ token, window: 1 }) !== null;
}

function digest(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}

/**
 * Checks an enrolment request `{secret, token}`: the secret must be base32 (at least 128 bits) and
 * the token its current code. Answers what to store and the recovery codes to show once.
 */
export function enrol(raw: unknown): { stored: StoredMfa; recovery: string[] } {
  const input = raw as { secret?: unknown; token?: unknown } | null;
  if (typeof input !== 'object' || input === null || typeof input.secret !== 'string') {
    throw mfaError('MFA enrolment needs authData.mfa = {secret: <base32>, token: <current code>}.');
  }
  const secret = input.secret.toUpperCase().replace(/=+$/, '');
  if (!/^[A-Z2-7]{26,}$/.test(secret)) {
    throw mfaError('The MFA secret must be base32 and at least 26 characters (128 bits).');
  }
  if (typeof input.token !== 'string' || !checkTotp(secret, input.token)) throw mfaError();
  const recovery = Array.from({ length: RECOVERY_CODES }, () => randomBytes(10).toString('hex'));
  return { stored: { secret, recovery: recovery.map(digest) }, recovery };
}

/**
 * Checks a login token against an enrolment: a current TOTP code, or an unused recovery code
 * (answered as `usedRecovery`, which the caller must remove). Compared in constant time.
 */
export function verify(stored: StoredMfa, token: string): { ok: boolean; usedRecovery?: string } {
  if (checkTotp(stored.secret, token)) return { ok: true };
  const given = Buffer.from(digest(token), 'hex');
  let match: string | undefined;
  for (const hash of stored.recovery) {
    if (timingSafeEqual(given, Buffer.from(hash, 'hex'))) match = hash;
  }
  return match ? { ok: true, usedRecovery: match } : { ok: false };
}
