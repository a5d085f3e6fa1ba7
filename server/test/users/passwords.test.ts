import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../../src/config/options.ts';
import { hashLoad, hashPassword, verifyPassword } from '../../src/users/passwords.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';
import { BAD_LOGIN, logInUser, signUpUser, storedHash, storeHash } from '../helpers/users.ts';

describe('password hashing', () => {
  it('hashes with scrypt and a random salt, and verifies', async () => {
    const a = await hashPassword('correct horse');
    const b = await hashPassword('correct horse');
    expect(a).toMatch(/^scrypt\$32768\$8\$1\$[\w-]+\$[\w-]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('correct horse');
    expect(await verifyPassword('correct horse', a)).toBe(true);
    expect(await verifyPassword('correct horsE', a)).toBe(false);
  });

  it('refuses a missing or malformed hash after doing the same work', async () => {
    expect(await verifyPassword('x', undefined)).toBe(false);
    expect(await verifyPassword('x', 'plain-text')).toBe(false);
  });
});

describe('hashes at once', () => {
  it('runs at most one hash per core; the others wait their turn and all finish right', async () => {
    const { max } = hashLoad();
    const passwords = Array.from({ length: max * 3 }, (_, i) => `password-${i}`);
    const pending = passwords.map((p) => hashPassword(p, 10));
    let highest = 0;
    const sampler = setInterval(() => {
      highest = Math.max(highest, hashLoad().running);
    }, 1);
    const load = hashLoad();
    expect(load.running).toBe(max);
    expect(load.queued).toBe(max * 2);
    const hashes = await Promise.all(pending);
    clearInterval(sampler);
    expect(highest).toBeLessThanOrEqual(max);
    for (let i = 0; i < passwords.length; i++) {
      expect(await verifyPassword(passwords[i]!, hashes[i]!, 10)).toBe(true);
    }
    expect(hashLoad()).toEqual({ running: 0, queued: 0, max });
  });

  it('frees its turn when a stored hash names parameters scrypt refuses', async () => {
    const { max } = hashLoad();
    const bad = 'scrypt$1000$8$1$c2FsdA$aGFzaA'; // N not a power of two
    const results = await Promise.allSettled(Array.from({ length: max * 2 }, () => verifyPassword('x', bad)));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(hashLoad()).toEqual({ running: 0, queued: 0, max });
    expect(await verifyPassword('pw', await hashPassword('pw', 10), 10)).toBe(true);
  });
});

describe('login against a stored hash the service cannot use', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('an scrypt hash without its six parts refuses every password as a bad login, not a 500', async () => {
    const user = await signUpUser(t, 'truncated', 'right-pw');
    const [scheme, n, r, p, salt] = (await storedHash(t, user.objectId)).split('$');
    expect(scheme).toBe('scrypt');
    for (const broken of [`scrypt$${n}$${r}$${p}$${salt}`, `scrypt$${n}`, 'scrypt']) {
      await storeHash(t, user.objectId, broken);
      for (const password of ['right-pw', 'wrong-pw']) {
        const res = await logInUser(t, 'truncated', password);
        expect(res.status, broken).toBe(404);
        expect(res.json, broken).toEqual(BAD_LOGIN);
      }
    }
  });

  it('a six-part hash of another scheme is not read as scrypt, even with scrypt parameters and key', async () => {
    const user = await signUpUser(t, 'otherscheme', 'right-pw');
    const parts = (await storedHash(t, user.objectId)).split('$');
    await storeHash(t, user.objectId, ['argon2', ...parts.slice(1)].join('$'));
    const res = await logInUser(t, 'otherscheme', 'right-pw');
    expect(res.status, res.text).toBe(404);
    expect(res.json).toEqual(BAD_LOGIN);
    await storeHash(t, user.objectId, parts.join('$'));
    expect((await logInUser(t, 'otherscheme', 'right-pw')).status).toBe(200);
  });

  it('a hash of another key length refuses even the right password as a bad login, not a 500', async () => {
    const user = await signUpUser(t, 'shortkey', 'right-pw');
    const parts = (await storedHash(t, user.objectId)).split('$');
    const key = Buffer.from(parts[5]!, 'base64url');
    expect(key).toHaveLength(32);
    // The first 16 bytes of the right key: a prefix match is no match.
    await storeHash(
      t,
      user.objectId,
      [...parts.slice(0, 5), key.subarray(0, 16).toString('base64url')].join('$'),
    );
    const res = await logInUser(t, 'shortkey', 'right-pw');
    expect(res.status, res.text).toBe(404);
    expect(res.json).toEqual(BAD_LOGIN);
    // The stored hash restored: the same password logs in (the refusal was the length).
    await storeHash(t, user.objectId, parts.join('$'));
    expect((await logInUser(t, 'shortkey', 'right-pw')).status).toBe(200);
  });
});

describe('password hashing cost', () => {
  it('is an option: new hashes take it, stored ones keep theirs, and logins work with both', async () => {
    const t = await startService({ passwordHashCost: 12 });
    try {
      const made = await t.request('POST', '/users', { body: { username: 'cheap', password: 'pw' } });
      expect(made.status).toBe(201);
      const hash = async (id: string) =>
        (await t.service.data.lookups.internal('_User', 'objectId', id, ['_hashed_password']))[0]!
          ._hashed_password as string;
      expect(await hash(made.json.objectId)).toMatch(/^scrypt\$4096\$8\$1\$/);
      expect(
        (await t.request('POST', '/login', { body: { username: 'cheap', password: 'pw' } })).status,
      ).toBe(200);
      expect(() => validateOptions({ ...KEYS, passwordHashCost: 11 })).toThrow(
        /Invalid option "passwordHashCost"/,
      );
    } finally {
      await t.close();
    }
  });
});
