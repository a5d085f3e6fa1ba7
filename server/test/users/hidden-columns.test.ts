import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointer, type TestUser } from '../helpers/access-world.ts';
import { buildDocWorld, text } from '../helpers/probe-worlds.ts';
import type { TestService } from '../helpers/service.ts';

/**
 * What of a user no other caller reaches: the hidden _User columns (password, authData, email),
 * other users' session tokens and sessions, and writes to other users' rows on every alias.
 */

let t: TestService;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let aliceSessionId: string;
let bobSessionId: string;
let ids: Record<string, string>;
beforeAll(async () => {
  ({ t, alice, bob, carol, aliceSessionId, bobSessionId, ids } = await buildDocWorld());
});
afterAll(async () => {
  await t?.close();
});

describe('hidden _User columns and secrets', () => {
  it('hidden columns are never queryable, selectable or sortable', async () => {
    for (const col of [
      '_hashed_password',
      '_mfa',
      '_perishable_token',
      '_auth_anonymous_id',
      '_rperm',
      '_wperm',
    ]) {
      const where = await t.request('GET', '/users', {
        sessionToken: alice.token,
        query: { where: { [col]: { $exists: true } } },
      });
      expect(where.status, `${col} ${where.text}`).toBe(400);
      expect(where.json).toEqual({
        code: 105,
        error: `Invalid where: invalid key name "${col}" (field names start with a letter and hold only letters, digits and _).`,
      });
      for (const param of ['keys', 'order', 'excludeKeys', 'include']) {
        const r = await t.request('GET', '/classes/_User', {
          sessionToken: alice.token,
          query: { [param]: col },
        });
        expect(r.status, `${param}=${col}: ${r.text}`).toBe(400);
        expect(r.json).toEqual({ code: 105, error: `Invalid ${param}: "${col}".` });
      }
    }
  });

  it('password, authData and email cannot be queried, selected by $select or sorted on', async () => {
    for (const field of ['password', 'authData', 'email', 'authData.anonymous.id']) {
      const refused = {
        code: 119,
        error: `This user is not allowed to query ${field.split('.')[0]} on class _User.`,
      };
      const where = await t.request('GET', '/users', {
        sessionToken: alice.token,
        query: { where: { [field]: { $exists: true } } },
      });
      expect(where.status, where.text).toBe(400);
      expect(where.json).toEqual(refused);
      const order = await t.request('GET', '/users', { sessionToken: alice.token, query: { order: field } });
      expect(order.status, order.text).toBe(400);
      expect(order.json).toEqual(refused);
      const select = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: {
          where: { title: { $select: { query: { className: '_User', where: {} }, key: field } } },
        },
      });
      expect(select.status, select.text).toBe(400);
      expect(select.json).toEqual(refused);
      const inQuery = await t.request('GET', '/classes/Doc', {
        sessionToken: carol.token,
        query: {
          where: {
            owner: { $inQuery: { className: '_User', where: { [field.split('.')[0]!]: { $regex: '^a' } } } },
          },
          count: 1,
          limit: 0,
        },
      });
      expect(inQuery.status, inQuery.text).toBe(400);
      expect(inQuery.json).toEqual(refused);
    }
  });

  it('email is stripped from find, get, include and keys (even for the owner)', async () => {
    const find = await t.request('GET', '/users', {
      sessionToken: alice.token,
      query: { keys: 'email,username' },
    });
    expect(find.status).toBe(200);
    expect(text(find)).not.toContain('@x.io');
    const get = await t.request('GET', `/users/${alice.id}`, { sessionToken: alice.token });
    expect(text(get)).not.toContain('@x.io');
    const inc = await t.request('GET', '/classes/Doc', {
      sessionToken: carol.token,
      query: { include: 'owner,refs,*', keys: 'owner.email,refs,owner' },
    });
    expect(inc.status, inc.text).toBe(200);
    expect(text(inc)).not.toContain('@x.io');
    expect(text(inc)).not.toContain('authData');
  });

  it('no answer carries another user session token', async () => {
    const paths = [
      ['/classes/Doc', { include: 'refs', where: { objectId: ids.pointing } }],
      ['/sessions', {}],
      ['/classes/_Session', {}],
      [`/sessions/${bobSessionId}`, {}],
    ] as const;
    for (const [p, q] of paths) {
      const r = await t.request('GET', p, { sessionToken: alice.token, query: q });
      expect(text(r)).not.toContain(bob.token);
    }
    // The escaped spelling is the same route as /classes/_Session (one normal form of a path).
    const viaEncoded = await t.request('GET', '/classes/%5FSession', { sessionToken: alice.token });
    const plain = await t.request('GET', '/classes/_Session', { sessionToken: alice.token });
    expect(viaEncoded.status).toBe(plain.status);
    expect(viaEncoded.json).toEqual(plain.json);
    expect(text(viaEncoded)).not.toContain(bob.token);
    const sub = await t.request('GET', '/classes/Doc', {
      sessionToken: alice.token,
      query: {
        where: { title: { $select: { query: { className: '_Session', where: {} }, key: 'sessionToken' } } },
      },
    });
    expect(sub.status).toBe(400);
    expect(sub.json).toEqual({ code: 119, error: 'Permission denied for action find on class _Session.' });
  });

  it('a user cannot read, change or delete another user session', async () => {
    const get = await t.request('GET', `/sessions/${bobSessionId}`, { sessionToken: alice.token });
    expect(get.json.code).toBe(101);
    const missing = await t.request('GET', '/sessions/doesnotexist', { sessionToken: alice.token });
    expect(missing.json).toEqual(get.json);
    const put = await t.request('PUT', `/sessions/${bobSessionId}`, {
      sessionToken: alice.token,
      body: { user: pointer('_User', alice.id) },
    });
    expect(put.status).toBe(403);
    expect(put.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    // The escaped spelling is the session route: master only, as /sessions/<id>.
    const putEnc = await t.request('PUT', `/classes/%5FSession/${aliceSessionId}`, {
      sessionToken: alice.token,
      body: { expiresAt: { __type: 'Date', iso: '2100-01-01T00:00:00.000Z' } },
    });
    expect(putEnc.status).toBe(403);
    expect(putEnc.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    const del = await t.request('DELETE', `/sessions/${bobSessionId}`, { sessionToken: alice.token });
    expect(del.json.code).toBe(101);
    const batch = await t.request('POST', '/batch', {
      sessionToken: alice.token,
      body: {
        requests: [
          { method: 'DELETE', path: `/classes/_Session/${bobSessionId}` },
          {
            method: 'PUT',
            path: `/api/sessions/${bobSessionId}`,
            body: { user: pointer('_User', alice.id) },
          },
          { method: 'GET', path: '/classes/_Session' },
        ],
      },
    });
    expect(text(batch)).not.toContain(bob.token);
    const me = await t.request('GET', '/users/me', { sessionToken: bob.token });
    expect(me.status).toBe(200);
  });

  it('cross-user _User writes are refused on every alias and through batch', async () => {
    const insufficient = (action: string) => ({
      code: 206,
      error: `Insufficient auth to ${action} user ${bob.id}.`,
    });
    // The escaped alias is the same route as the alias (one normal form of a path).
    for (const p of [`/users/${bob.id}`, `/classes/_User/${bob.id}`, `/classes/%5FUser/${bob.id}`]) {
      const r = await t.request('PUT', p, { sessionToken: alice.token, body: { username: 'pwned' } });
      expect(r.status, `${p} ${r.text}`).toBe(400);
      expect(r.json).toEqual(insufficient('update'));
      const d = await t.request('DELETE', p, { sessionToken: alice.token });
      expect(d.status, `${p} ${d.text}`).toBe(400);
      expect(d.json).toEqual(insufficient('delete'));
    }
    const b = await t.request('POST', '/batch', {
      sessionToken: alice.token,
      body: {
        transaction: true,
        requests: [{ method: 'PUT', path: `/classes/_User/${bob.id}`, body: { username: 'pwned' } }],
      },
    });
    expect(b.status, b.text).toBe(400);
    expect(b.json).toEqual(insufficient('update'));
    const row = await t.request('GET', `/users/${bob.id}`, { as: 'master' });
    expect(row.json.username).toBe('bob');
  });
});
