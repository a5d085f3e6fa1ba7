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

/**
 * Keys are compared as fixed-size blocks: both sides' UTF-8 bytes zero-padded to KEY_BLOCK bytes, so
 * the comparison covers the same bytes whatever either key's length and however much of it matches
 * (a given key longer than the block is compared on its first KEY_BLOCK bytes, then refused).
 * Cheaper than a SHA-256 of the given key per request (5-8 µs of a get-by-id in the bench's profile).
 */
const KEY_BLOCK = 256;
/** The configured keys (a handful), padded once; a configured key longer than the block is hashed instead. */
const expectedBlocks = new Map<string, Buffer | null>();
const givenBlock = Buffer.alloc(KEY_BLOCK);

function blockOf(expected: string): Buffer | null {
  let block = expectedBlocks.get(expected);
  if (block === undefined) {
    block = Buffer.byteLength(expected) > KEY_BLOCK ? null : Buffer.alloc(KEY_BLOCK);
    block?.write(expected, 'utf8');
    if (expectedBlocks.size >= 64) expectedBlocks.clear();
    expectedBlocks.set(expected, block);
  }
  return block;
}

/** Constant-time string comparison: its time tells nothing of `expected` but whether `given` equals it. */
export function safeEqual(given: string | undefined | null, expected: string | undefined | null): boolean {
  if (typeof given !== 'string' || typeof expected !== 'string') return false;
  const block = blockOf(expected);
  if (block === null) {
    return (
      timingSafeEqual(hash('sha256', given, 'buffer'), hash('sha256', expected, 'buffer')) &&
      given === expected
    );
  }
  givenBlock.fill(0);
  // write() stops at the block's end; the byte lengths (compared after) refuse anything longer.
  givenBlock.write(given, 'utf8');
  const sameBytes = timingSafeEqual(givenBlock, block);
  // Equal bytes are not always equal strings: lone surrogates all encode as U+FFFD.
  return sameBytes && Buffer.byteLength(given) === Buffer.byteLength(expected) && given === expected;
}
