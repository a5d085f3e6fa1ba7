import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needsRehash, verifyPassword } from '../../src/users/passwords.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { BAD_LOGIN, logInUser, signUpUser, storedHash, storeHash } from '../helpers/users.ts';

describe('a bcrypt hash imported from parse-server (docs/transfer.md)', () => {
  it('verifies the right password only, in each of the $2a$, $2b$ and $2y$ spellings', async () => {
    const hash = bcrypt.hashSync('old-pw', 4);
    expect(hash).toMatch(/^\$2b\$04\$/);
    for (const prefix of ['$2a$', '$2b$', '$2y$']) {
      const spelled = prefix + hash.slice(4);
      expect(await verifyPassword('old-pw', spelled)).toBe(true);
      expect(await verifyPassword('old-pW', spelled)).toBe(false);
      expect(needsRehash(spelled)).toBe(true);
    }
    // Cut short or of another variant: not read as bcrypt, and refused.
    expect(await verifyPassword('old-pw', hash.slice(0, -1))).toBe(false);
    expect(await verifyPassword('old-pw', `$2x$${hash.slice(4)}`)).toBe(false);
    expect(needsRehash('scrypt$4096$8$1$a$b')).toBe(false);
  });

  describe('at login', () => {
    let t: TestService;
    beforeAll(async () => {
      t = await startService({ passwordHashCost: 12 });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('logs in with the old password and replaces the hash by the service own on that first login', async () => {
      const user = await signUpUser(t, 'moved', 'ignored-pw');
      const imported = bcrypt.hashSync('old-pw', 4);
      await storeHash(t, user.objectId, imported);

      const wrong = await logInUser(t, 'moved', 'wrong-pw');
      expect(wrong.status).toBe(404);
      expect(wrong.json).toEqual(BAD_LOGIN);
      expect(await storedHash(t, user.objectId)).toBe(imported);

      const first = await logInUser(t, 'moved', 'old-pw');
      expect(first.status, first.text).toBe(200);
      expect(first.json.objectId).toBe(user.objectId);
      const replaced = await storedHash(t, user.objectId);
      expect(replaced).toMatch(/^scrypt\$4096\$8\$1\$/);
      expect(replaced).not.toContain(imported);

      // The new hash holds the same password; the old one is gone.
      expect((await logInUser(t, 'moved', 'old-pw')).status).toBe(200);
      expect(await storedHash(t, user.objectId)).toBe(replaced);
      expect((await logInUser(t, 'moved', 'ignored-pw')).status).toBe(404);
    });

    it('verifyPassword replaces it too (the same password check as login)', async () => {
      const user = await signUpUser(t, 'verified', 'ignored-pw');
      await storeHash(t, user.objectId, bcrypt.hashSync('old-pw', 4));
      const res = await t.request('POST', '/verifyPassword', {
        body: { username: 'verified', password: 'old-pw' },
      });
      expect(res.status, res.text).toBe(200);
      expect(await storedHash(t, user.objectId)).toMatch(/^scrypt\$/);
    });
  });
});
