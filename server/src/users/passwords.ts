import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';
import { availableParallelism } from 'node:os';
import bcrypt from 'bcryptjs';

/**
 * scrypt with N = 2^cost, r = 8, p = 1: memory-hard (128 * N * r bytes: 32 MiB at the default cost
 * of 15) and run on libuv's thread pool, never on the event loop. The option `passwordHashCost`
 * sets the cost of new hashes; stored hashes name their own parameters.
 */
export const DEFAULT_HASH_COST = 15;
const KEY_LENGTH = 32;

function paramsFor(cost: number): ScryptOptions {
  const N = 2 ** cost;
  return { N, r: 8, p: 1, maxmem: 256 * N * 8 };
}

/**
 * Hashes running at once, at most one per core. libuv's pool has 4 threads: on a machine with fewer
 * cores, more memory-hard hashes side by side only evict each other's memory from the caches (each
 * takes longer, and together they finish no sooner) and take the cores the event loop needs to keep
 * answering other requests during a burst of logins. The others wait their turn, in order.
 */
let running = 0;
const queued: Array<() => void> = [];
const MAX_RUNNING = Math.max(1, availableParallelism());

async function derive(password: string, salt: Buffer, params: ScryptOptions): Promise<Buffer> {
  if (running >= MAX_RUNNING) await new Promise<void>((resolve) => queued.push(resolve));
  else running++;
  try {
    return await new Promise((resolve, reject) =>
      scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, params, (err, key) =>
        err ? reject(err) : resolve(key),
      ),
    );
  } finally {
    // The slot passes straight to the next waiter, so `running` counts it throughout.
    const next = queued.shift();
    if (next) next();
    else running--;
  }
}

/** Hashes running and waiting (tests). */
export function hashLoad(): { running: number; queued: number; max: number } {
  return { running, queued: queued.length, max: MAX_RUNNING };
}

/** `scrypt$N$r$p$salt$hash` (base64url): self-describing, so parameters can be raised later. */
export async function hashPassword(password: string, cost = DEFAULT_HASH_COST): Promise<string> {
  const salt = randomBytes(16);
  const params = paramsFor(cost);
  const key = await derive(password, salt, params);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
}

/**
 * Checks a password against a stored hash in constant time. With no stored hash it still spends
 * the same work on a dummy hash, so a login for an unknown user takes as long as a wrong password.
 */
export async function verifyPassword(
  password: string,
  stored: string | null | undefined,
  cost = DEFAULT_HASH_COST,
): Promise<boolean> {
  if (isImportedHash(stored)) return verifyImported(password, stored as string);
  const parts = typeof stored === 'string' ? stored.split('$') : [];
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    await derive(password, DUMMY_SALT, paramsFor(cost));
    return false;
  }
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const N = Number(n);
  const key = await derive(password, Buffer.from(salt, 'base64url'), {
    N,
    r: Number(r),
    p: Number(p),
    maxmem: 256 * N * Number(r),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

const DUMMY_SALT = randomBytes(16);

/**
 * A bcrypt hash as the incumbent parse-server stores it (`$2a$`, `$2b$` or `$2y$`, cost, 53 characters
 * of salt and hash), brought over by the import from parse-server (docs/transfer.md). It is accepted
 * at login and replaced by the service's own hash on the first successful one (needsRehash).
 */
const BCRYPT_HASH = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

function isImportedHash(stored: string | null | undefined): boolean {
  return typeof stored === 'string' && BCRYPT_HASH.test(stored);
}

/**
 * True when a stored hash that just verified is not the service's own (an imported bcrypt hash):
 * the caller stores hashPassword's answer in its place, so the old hash is never kept after that.
 */
export function needsRehash(stored: string | null | undefined): boolean {
  return isImportedHash(stored);
}

/**
 * bcryptjs (pure JavaScript, as the incumbent itself uses: no native build at install) compares in
 * slices that yield to the event loop. The incumbent hashes the password as given, without NFKC.
 * Through the same queue as scrypt, so a burst of imported logins is bounded as any other.
 */
async function verifyImported(password: string, stored: string): Promise<boolean> {
  if (running >= MAX_RUNNING) await new Promise<void>((resolve) => queued.push(resolve));
  else running++;
  try {
    return await bcrypt.compare(password, stored);
  } finally {
    const next = queued.shift();
    if (next) next();
    else running--;
  }
}
