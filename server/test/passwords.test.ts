import { describe, expect, it } from 'vitest';
import { hashLoad, hashPassword, verifyPassword } from '../src/users/passwords.ts';

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
