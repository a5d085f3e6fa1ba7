import { hash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 10 random characters from [A-Za-z0-9] (PROTOCOL.md "Addresses and defaults"). */
export function newObjectId(length = 10): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; out.length < length; i++) {
    if (i >= bytes.length) return out + newObjectId(length - out.length);
    const b = bytes[i]!;
    // 248 = 62 * 4: rejecting bytes above it keeps every character equally likely.
    if (b < 248) out += ID_ALPHABET[b % 62];
  }
  return out;
}

export function newSessionToken(): string {
  return `r:${randomBytes(16).toString('hex')}`;
}

export function randomSecret(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

export function randomIntBelow(n: number): number {
  return randomInt(n);
}

/** Digests of `expected` values (the configured keys, a handful): hashed once, not on every request. */
const expectedDigests = new Map<string, Buffer>();

/** Constant-time string comparison: hashing first makes the lengths equal, so length leaks nothing either. */
export function safeEqual(given: string | undefined | null, expected: string | undefined | null): boolean {
  if (typeof given !== 'string' || typeof expected !== 'string') return false;
  const a = hash('sha256', given, 'buffer');
  let b = expectedDigests.get(expected);
  if (!b) {
    b = hash('sha256', expected, 'buffer');
    if (expectedDigests.size >= 64) expectedDigests.clear();
    expectedDigests.set(expected, b);
  }
  return timingSafeEqual(a, b) && given.length === expected.length;
}
