import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClass, createRow, createUser, type TestUser } from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Reads by id keep their SQL per shape (class, access, number of principals): callers with as many
 * principals as each other share the text but never each other's parameters.
 */
describe('reads by id with a kept SQL text', () => {
  let t: TestService;
  let ann: TestUser;
  let bob: TestUser;
  const rows: Record<string, string> = {};

  beforeAll(async () => {
    t = await startService();
    ann = await createUser(t, 'ann');
    bob = await createUser(t, 'bob');
    await createClass(t, 'Note', { text: { type: 'String' } });
    rows.ann = await createRow(t, 'Note', { text: 'ann', ACL: { [ann.id]: { read: true, write: true } } });
    rows.bob = await createRow(t, 'Note', { text: 'bob', ACL: { [bob.id]: { read: true, write: true } } });
    rows.open = await createRow(t, 'Note', { text: 'open' });
  });
  afterAll(() => t?.close());

  const get = (who: TestUser | undefined, id: string) =>
    t.request('GET', `/classes/Note/${id}`, who ? { sessionToken: who.token } : {});

  it('answers each caller with its own principals, in any order of calls', async () => {
    for (let round = 0; round < 3; round++) {
      for (const [who, id, status] of [
        [ann, rows.ann, 200],
        [bob, rows.ann, 404],
        [bob, rows.bob, 200],
        [ann, rows.bob, 404],
        [undefined, rows.ann, 404],
        [undefined, rows.open, 200],
        [ann, rows.open, 200],
      ] as const) {
        const res = await get(who, id!);
        expect([who?.username ?? 'anonymous', id, res.status]).toEqual([
          who?.username ?? 'anonymous',
          id,
          status,
        ]);
        if (status === 404) expect(res.json).toEqual({ code: 101, error: 'Object not found.' });
      }
    }
  });

  it('updates and deletes by id, which read the row first, keep to the write ACL', async () => {
    const put = await t.request('PUT', `/classes/Note/${rows.bob}`, {
      sessionToken: ann.token,
      body: { text: 'x' },
    });
    expect([put.status, put.json]).toEqual([404, { code: 101, error: 'Object not found.' }]);
    const own = await t.request('PUT', `/classes/Note/${rows.ann}`, {
      sessionToken: ann.token,
      body: { text: 'y' },
    });
    expect(own.status).toBe(200);
    const read = await get(ann, rows.ann!);
    expect(read.json.text).toBe('y');
  });
});
