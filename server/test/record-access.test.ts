import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointer, type TestUser } from './helpers/access-world.ts';
import { buildDocWorld, text } from './helpers/probe-worlds.ts';
import type { TestService } from './helpers/service.ts';

/**
 * Row ACLs and protectedFields on records, probed on every read and write path: nothing a caller
 * may not read is answered, counted, matched, included, echoed or inferable.
 */

let t: TestService;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let bobSessionId: string;
let ids: Record<string, string>;
beforeAll(async () => {
  ({ t, alice, bob, carol, bobSessionId, ids } = await buildDocWorld());
});
afterAll(async () => {
  await t?.close();
});

describe('row ACL and protectedFields on records', () => {
  it('unreadable rows answer 101 exactly like missing ones (get, update, delete)', async () => {
    for (const id of [ids.alicePrivate, ids.masterOnly]) {
      const g = await t.request('GET', `/classes/Doc/${id}`, { sessionToken: bob.token });
      const missing = await t.request('GET', '/classes/Doc/nope123456', { sessionToken: bob.token });
      expect(g.json).toEqual(missing.json);
      const u = await t.request('PUT', `/classes/Doc/${id}`, {
        sessionToken: bob.token,
        body: { title: 'x' },
      });
      expect(u.json).toEqual(missing.json);
      const d = await t.request('DELETE', `/classes/Doc/${id}`, { sessionToken: bob.token });
      expect(d.json).toEqual(missing.json);
    }
  });

  it('protected field values cannot be inferred by where, order, count or subquery', async () => {
    const probes: Array<Record<string, unknown>> = [
      { where: { secret: { $gt: 's' } } },
      { where: { $or: [{ secret: 's-public' }] } },
      { where: { $nor: [{ secret: { $regex: '^s' } }] } },
      { order: '-secret' },
      { order: 'score,secret' },
      { where: { secret: { $exists: true } }, count: 1, limit: 0 },
      { where: { ref: { $inQuery: { className: 'Doc', where: { secret: 's-alice' } } } } },
      { where: { title: { $select: { query: { className: 'Doc', where: {} }, key: 'secret' } } } },
      { where: { title: { $dontSelect: { query: { className: 'Doc', where: {} }, key: 'secret' } } } },
      {
        where: {
          ref: {
            $notInQuery: {
              className: 'Doc',
              where: { ref: { $inQuery: { className: 'Doc', where: { secret: 's-alice' } } } },
            },
          },
        },
      },
    ];
    for (const q of probes) {
      const r = await t.request('GET', '/classes/Doc', { sessionToken: alice.token, query: q });
      expect(r.status, `${JSON.stringify(q)} ${r.text}`).toBe(400);
      expect(r.json).toEqual({ code: 119, error: 'This user is not allowed to query secret on class Doc.' });
      // The role exempted from protection may query it.
      const staff = await t.request('GET', '/classes/Doc', { sessionToken: carol.token, query: q });
      expect(staff.status, `${JSON.stringify(q)} ${staff.text}`).toBe(200);
    }
  });

  it('rows the caller cannot read are invisible to find, count and subqueries', async () => {
    const count = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: { where: { score: { $gte: 42 } }, count: 1, limit: 0 },
    });
    expect(count.json.count).toBe(0);
    const sub = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: { where: { ref: { $inQuery: { className: 'Doc', where: { score: 42 } } } } },
    });
    expect(sub.json.results).toEqual([]);
    const notIn = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: {
        where: { title: { $select: { query: { className: 'Doc', where: { score: 777 } }, key: 'title' } } },
      },
    });
    expect(notIn.json.results).toEqual([]);
  });

  it('include leaves unreadable pointers (single and in arrays) bare, and never hydrates sessions', async () => {
    const r = await t.request('GET', `/classes/Doc/${ids.pointing}`, {
      sessionToken: bob.token,
      query: { include: 'ref,refs,ref.ref,*' },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.ref).toEqual(pointer('Doc', ids.alicePrivate));
    expect(r.json.refs[0]).toEqual(pointer('Doc', ids.alicePrivate));
    expect(r.json.refs[2]).toEqual(pointer('_Session', bobSessionId));
    expect(text(r)).not.toContain('s-alice');
    expect(text(r)).not.toContain('alice-only');
    // Alice can read the included row, but not its protected field.
    const a = await t.request('GET', `/classes/Doc/${ids.pointing}`, {
      sessionToken: alice.token,
      query: { include: 'ref', keys: 'ref.secret,ref.title' },
    });
    expect(a.json.ref.title).toBe('alice-only');
    expect(text(a)).not.toContain('s-alice');
  });

  it('update responses do not echo protected fields', async () => {
    const r = await t.request('PUT', `/classes/Doc/${ids.public}`, {
      sessionToken: alice.token,
      body: {
        secret: { __op: 'Delete' },
        tags: { __op: 'Add', objects: ['t'] },
        score: { __op: 'Increment', amount: 0 },
      },
    });
    expect(r.status, r.text).toBe(200);
    const put = await t.request('PUT', `/classes/Doc/${ids.public}`, {
      sessionToken: alice.token,
      body: { secret: 'new-secret-value' },
    });
    expect(text(put)).not.toContain('new-secret-value');
    const created = await t.request('POST', '/classes/Doc', {
      sessionToken: alice.token,
      body: { secret: 'created-secret', title: 'c' },
    });
    expect(created.status).toBe(201);
    expect(text(created)).not.toContain('created-secret');
  });

  it('atomic ops on a write-only row do not return its stored values', async () => {
    const r = await t.request('PUT', `/classes/Doc/${ids.writeOnly}`, {
      sessionToken: bob.token,
      body: {
        score: { __op: 'Increment', amount: 0 },
        tags: { __op: 'AddUnique', objects: [] },
        'meta.n': { __op: 'Increment', amount: 0 },
      },
    });
    expect(r.status, r.text).toBe(200);
    expect(text(r)).not.toContain('777');
    expect(text(r)).not.toContain('wo-tag-1');
    expect(r.json.score).toBeUndefined();
    expect(r.json.tags).toBeUndefined();
    // In a batch too.
    const b = await t.request('POST', '/batch', {
      sessionToken: bob.token,
      body: {
        transaction: true,
        requests: [
          {
            method: 'PUT',
            path: `/classes/Doc/${ids.writeOnly}`,
            body: { score: { __op: 'Increment', amount: 0 } },
          },
        ],
      },
    });
    expect(b.status, b.text).toBe(200);
    expect(text(b)).not.toContain('777');
    // A readable row still gets its produced values.
    const own = await t.request('PUT', `/classes/Doc/${ids.alicePrivate}`, {
      sessionToken: alice.token,
      body: { score: { __op: 'Increment', amount: 1 } },
    });
    expect(own.json.score).toBe(43);
  });

  it('a transaction batch with a denied member changes nothing', async () => {
    const b = await t.request('POST', '/batch', {
      sessionToken: bob.token,
      body: {
        transaction: true,
        requests: [
          { method: 'PUT', path: `/classes/Doc/${ids.public}`, body: { title: 'changed-by-batch' } },
          { method: 'PUT', path: `/classes/Doc/${ids.alicePrivate}`, body: { title: 'stolen' } },
        ],
      },
    });
    expect(b.status).toBe(404);
    expect(b.json).toEqual({ code: 101, error: 'Object not found.' });
    const row = await t.request('GET', `/classes/Doc/${ids.public}`, { as: 'master' });
    expect(row.json.title).not.toBe('changed-by-batch');
  });

  it('$relatedTo on an unreadable owner matches nothing; on sessions it is refused', async () => {
    await t.request('PUT', `/classes/Doc/${ids.masterOnly}`, {
      as: 'master',
      body: { rel: { __op: 'AddRelation', objects: [pointer('Doc', ids.public)] } },
    });
    const r = await t.request('GET', '/classes/Doc', {
      sessionToken: bob.token,
      query: { where: { $relatedTo: { object: pointer('Doc', ids.masterOnly), key: 'rel' } } },
    });
    expect(r.json.results).toEqual([]);
    const s = await t.request('GET', '/users', {
      sessionToken: bob.token,
      query: { where: { $relatedTo: { object: pointer('_Session', bobSessionId), key: 'user' } } },
    });
    expect(s.status, s.text).toBe(400);
    expect(s.json).toEqual({ code: 119, error: 'Permission denied for action get on class _Session.' });
  });
});
