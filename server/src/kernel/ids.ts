import { hash, randomBytes, randomFillSync, randomInt, timingSafeEqual } from 'node:crypto';

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Random bytes for object ids, drawn 4 kB at a time: one call into the crypto module per few
 * hundred ids instead of one per id. (Ids are not secrets; session tokens and secrets below take
 * their own bytes.)
 */
const ID_POOL = Buffer.alloc(4096);
let idPoolAt = ID_POOL.length;

function idByte(): number {
  if (idPoolAt >= ID_POOL.length) {
    randomFillSync(ID_POOL);
    idPoolAt = 0;
  }
  return ID_POOL[idPoolAt++]!;
}

/** 10 random characters from [A-Za-z0-9] (PROTOCOL.md "Addresses and defaults"). */
export function newObjectId(length = 10): string {
  let out = '';
  while (out.length < length) {
    const b = idByte();
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
