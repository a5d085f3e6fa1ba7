import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointer, type TestUser } from './helpers/access-world.ts';
import { buildDocWorld, text } from './helpers/probe-worlds.ts';
import type { TestService } from './helpers/service.ts';

/** The master-only surfaces: system classes, masterKeyOnly config entries and _Role writes. */

let t: TestService;
let alice: TestUser;
let carol: TestUser;
beforeAll(async () => {
  ({ t, alice, carol } = await buildDocWorld());
});
afterAll(async () => {
  await t?.close();
});

describe('master-only surfaces', () => {
  const masterOnlyClasses = [
    '_JobStatus',
    '_Hooks',
    '_GlobalConfig',
    '_Idempotency',
    '_PushStatus',
    '_Audience',
  ];
  it('master-only classes are unreachable by REST, batch, include and subqueries', async () => {
    const masterOnly = { code: 119, error: 'unauthorized: master key is required' };
    for (const c of masterOnlyClasses) {
      // _GlobalConfig is not a class name at all on the class routes (the config has its own route).
      const reserved = c === '_GlobalConfig';
      for (const [m, p] of [
        ['GET', `/classes/${c}`],
        ['GET', `/classes/${c}/x`],
        ['POST', `/classes/${c}`],
        ['PUT', `/classes/${c}/x`],
        ['DELETE', `/classes/${c}/x`],
      ] as const) {
        const r = await t.request(m, p, {
          sessionToken: carol.token,
          body: m === 'GET' || m === 'DELETE' ? undefined : {},
        });
        expect(r.status, `${m} ${p} ${r.text}`).toBe(reserved ? 400 : 403);
        expect(r.json, `${m} ${p}`).toEqual(
          reserved
            ? { code: 103, error: `Invalid class name: "${c}". The name ${c} is reserved.` }
            : masterOnly,
        );
      }
      const sub = await t.request('GET', '/classes/Doc', {
        sessionToken: carol.token,
        query: { where: { ref: { $inQuery: { className: c, where: {} } } } },
      });
      expect(sub.status, sub.text).toBe(reserved ? 400 : 403);
      expect(sub.json, c).toEqual(reserved ? { code: 103, error: `Invalid class name: ${c}.` } : masterOnly);
    }
    for (const p of ['/schemas', '/schemas/Doc', '/devMailbox', '/history/Doc', '/history/Doc/x']) {
      const r = await t.request('GET', p, { sessionToken: carol.token });
      expect(r.status, p).toBe(403);
      expect(r.json, p).toEqual(masterOnly);
    }
    for (const [m, p] of [
      ['PUT', '/config'],
      ['DELETE', '/purge/Doc'],
      ['PUT', '/schemas/Doc'],
      ['POST', '/schemas/Evil'],
      ['DELETE', '/schemas/Doc'],
      ['POST', '/history/Doc/x/revert'],
      ['POST', '/history/Doc/x/restore'],
    ] as const) {
      const r = await t.request(m, p, { sessionToken: carol.token, body: { params: { a: 1 } } });
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.json, `${m} ${p}`).toEqual(masterOnly);
      const b = await t.request('POST', '/batch', {
        sessionToken: carol.token,
        body: { requests: [{ method: m, path: p, body: { params: { a: 1 } } }] },
      });
      expect(b.json[0].error.code, `${m} ${p}`).toBe(119);
    }
  });

  it('GET /config hides masterKeyOnly entries', async () => {
    await t.request('PUT', '/config', {
      as: 'master',
      body: { params: { open: 1, hiddenParam: 'topsecret' }, masterKeyOnly: { hiddenParam: true } },
    });
    const r = await t.request('GET', '/config', {});
    expect(r.json.params.open).toBe(1);
    expect(text(r)).not.toContain('topsecret');
    expect(text(r)).not.toContain('hiddenParam');
  });

  it('_Role writes and relation ops by non-master are refused', async () => {
    const roles = await t.request('GET', '/roles', { as: 'master', query: { where: { name: 'Staff' } } });
    const staff = roles.json.results[0].objectId as string;
    for (const path of [`/roles/${staff}`, `/classes/_Role/${staff}`]) {
      const r = await t.request('PUT', path, {
        sessionToken: alice.token,
        body: { users: { __op: 'AddRelation', objects: [pointer('_User', alice.id)] } },
      });
      expect(r.status, r.text).toBe(400);
      expect(r.json).toEqual({ code: 119, error: 'Permission denied for action update on class _Role.' });
    }
    const create = await t.request('POST', '/roles', {
      sessionToken: alice.token,
      body: { name: 'Evil', users: { __op: 'AddRelation', objects: [pointer('_User', alice.id)] } },
    });
    expect(create.json.code).toBe(119);
    const del = await t.request('DELETE', `/roles/${staff}`, { sessionToken: carol.token });
    expect(del.json.code).toBe(119);
    const members = await t.request('GET', '/users', {
      as: 'master',
      query: { where: { $relatedTo: { object: pointer('_Role', staff), key: 'users' } } },
    });
    expect(members.json.results.map((u: { objectId: string }) => u.objectId)).toEqual([carol.id]);
  });
});
