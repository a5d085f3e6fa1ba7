import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointer, type TestUser } from './helpers/access-world.ts';
import { buildDocWorld } from './helpers/probe-worlds.ts';
import type { TestService } from './helpers/service.ts';

/** Crafted field and class names are refused on every path before they reach SQL. */

let t: TestService;
let alice: TestUser;
let ids: Record<string, string>;
beforeAll(async () => {
  ({ t, alice, ids } = await buildDocWorld());
});
afterAll(async () => {
  await t?.close();
});

describe('crafted names cannot inject SQL', () => {
  const evil = ['a"b', 'a;DROP TABLE "Doc"', 'a b', "a'b", 'a--', 'a)'];
  it('field and class names are validated on every path', async () => {
    for (const name of evil) {
      for (const param of ['keys', 'order', 'include', 'excludeKeys']) {
        const r = await t.request('GET', '/classes/Doc', {
          sessionToken: alice.token,
          query: { [param]: name },
        });
        expect(r.status, `${param}=${name} ${r.text}`).toBe(400);
        expect(r.json).toEqual({ code: 105, error: `Invalid ${param}: ${JSON.stringify(name)}.` });
      }
      const w = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { [name]: 1 } },
      });
      expect(w.status, w.text).toBe(400);
      expect(w.json).toEqual({
        code: 105,
        error: `Invalid where: invalid key name ${JSON.stringify(name)} (field names start with a letter and hold only letters, digits and _).`,
      });
      const sub = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { ref: { $inQuery: { className: name, where: {} } } } },
      });
      expect(sub.status, sub.text).toBe(400);
      expect(sub.json).toEqual({ code: 103, error: `Invalid class name: ${name}.` });
      const sel = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { title: { $select: { query: { className: 'Doc', where: {} }, key: name } } } },
      });
      expect(sel.status, sel.text).toBe(400);
      expect(sel.json).toEqual({ code: 105, error: `Invalid where: $select key ${JSON.stringify(name)}.` });
      const rel = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: { where: { $relatedTo: { object: pointer('Doc', ids.public), key: name } } },
      });
      expect(rel.status, rel.text).toBe(400);
      expect(rel.json).toEqual({
        code: 105,
        error: `Invalid where: $relatedTo key ${JSON.stringify(name)}.`,
      });
      const cls = await t.request('GET', `/classes/${encodeURIComponent(name)}`, {
        sessionToken: alice.token,
      });
      expect(cls.status, cls.text).toBe(400);
      expect(cls.json).toEqual({
        code: 103,
        error: `Invalid class name: ${JSON.stringify(name)}. Class names start with a letter and hold only letters, digits and _.`,
      });
      const body = await t.request('PUT', `/classes/Doc/${ids.public}`, {
        sessionToken: alice.token,
        body: { [name]: 1 },
      });
      expect(body.status, body.text).toBe(400);
      expect(body.json).toEqual({
        code: 105,
        error: `Invalid field name: ${name} (field names start with a letter and hold only letters, digits and _).`,
      });
      const relOp = await t.request('PUT', `/classes/Doc/${ids.public}`, {
        sessionToken: alice.token,
        body: { [name]: { __op: 'AddRelation', objects: [pointer('Doc', ids.public)] } },
      });
      expect(relOp.status, relOp.text).toBe(400);
      expect(relOp.json).toEqual({
        code: 105,
        error: `Invalid field name: ${name} (field names start with a letter and hold only letters, digits and _).`,
      });
    }
    const still = await t.request('GET', '/classes/Doc', { as: 'master', query: { count: 1, limit: 0 } });
    expect(still.json.count).toBeGreaterThan(0);
  });
});
