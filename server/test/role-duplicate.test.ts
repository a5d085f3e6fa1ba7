import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRole, createUser, pointer } from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/** A duplicate role name is refused with 137 in words that name the conflict, and nothing is written. */

let t: TestService;
beforeAll(async () => {
  t = await startService();
  await createRole(t, 'Editors');
});
afterAll(async () => {
  await t?.close();
});

const roleCount = async () =>
  (await t.request('GET', '/roles', { as: 'master', query: { count: 1, limit: 0 } })).json.count;

describe('duplicate role names', () => {
  it('POST /roles with a taken name answers 137 naming the role', async () => {
    const before = await roleCount();
    const res = await t.request('POST', '/roles', { as: 'master', body: { name: 'Editors' } });
    expect([res.status, res.json]).toEqual([
      400,
      { code: 137, error: 'A role named Editors already exists.' },
    ]);
    expect(await roleCount()).toBe(before);
  });

  it('the same in a batch member and with a relation in the body', async () => {
    const ann = await createUser(t, 'ann');
    const res = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        requests: [
          {
            method: 'POST',
            path: '/roles',
            body: { name: 'Editors', users: { __op: 'AddRelation', objects: [pointer('_User', ann.id)] } },
          },
        ],
      },
    });
    expect(res.json).toEqual([{ error: { code: 137, error: 'A role named Editors already exists.' } }]);
  });

  it('another unique value (a chosen objectId) keeps the generic text', async () => {
    const id = await createRole(t, 'Writers');
    const res = await t.request('POST', '/roles', { as: 'master', body: { name: 'Other', objectId: id } });
    expect([res.status, res.json]).toEqual([
      400,
      { code: 137, error: 'A duplicate value for a field with unique values was provided.' },
    ]);
  });
});
