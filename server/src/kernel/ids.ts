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

/** 10 random characters from [A-Za-z0-9] (docs/protocol.md#addresses). */
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

/**
 * Keys are compared as fixed-size blocks: both sides' UTF-8 bytes zero-padded to KEY_BLOCK bytes, so
 * the comparison covers the same bytes whatever either key's length and however much of it matches
 * (a given key longer than the block is compared on its first KEY_BLOCK bytes, then refused).
 * Cheaper than a SHA-256 of the given key per request (6-9 µs of a get-by-id in the bench's profile).
 */
const KEY_BLOCK = 256;
/**
 * What a configured key (one of a handful) is compared against, made once: its padded block, or
 * for a key longer than the block, its SHA-256 digest.
 */
const expectedForms = new Map<string, { block: Buffer; hashed: boolean }>();
const givenBlock = Buffer.alloc(KEY_BLOCK);

function formOf(expected: string): { block: Buffer; hashed: boolean } {
  let form = expectedForms.get(expected);
  if (!form) {
    const hashed = Buffer.byteLength(expected) > KEY_BLOCK;
    const block = hashed ? hash('sha256', expected, 'buffer') : Buffer.alloc(KEY_BLOCK);
    if (!hashed) block.write(expected, 'utf8');
    form = { block, hashed };
    if (expectedForms.size >= 64) expectedForms.clear();
    expectedForms.set(expected, form);
  }
  return form;
}

/** Constant-time string comparison: its time tells nothing of `expected` but whether `given` equals it. */
export function safeEqual(given: string | undefined | null, expected: string | undefined | null): boolean {
  if (typeof given !== 'string' || typeof expected !== 'string') return false;
  const { block, hashed } = formOf(expected);
  let sameBytes: boolean;
  if (hashed) {
    sameBytes = timingSafeEqual(hash('sha256', given, 'buffer'), block);
  } else {
    givenBlock.fill(0);
    // write() stops at the block's end: a longer key, or one with trailing NUL bytes, can match the
    // block; the string comparison below refuses it.
    givenBlock.write(given, 'utf8');
    sameBytes = timingSafeEqual(givenBlock, block);
  }
  // Only reached once the bytes matched. Equal bytes are not always equal strings: lone
  // surrogates all encode as U+FFFD.
  return sameBytes && given === expected;
}
