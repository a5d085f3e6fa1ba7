import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { startService, type TestService } from './helpers/service.ts';

let t: TestService;
let ada: { objectId: string; sessionToken: string };

/** The trace rows the fixture's after-triggers wrote, once every trigger under way has run. */
async function traces(where: Record<string, unknown>): Promise<Array<Record<string, any>>> {
  await t.service.cloud.triggers.idle();
  const res = await t.request('GET', '/classes/TriggerLog', {
    as: 'master',
    query: { where, order: 'createdAt' },
  });
  return res.json.results ?? [];
}

async function count(className: string, where: Record<string, unknown> = {}): Promise<number> {
  const res = await t.request('GET', `/classes/${className}`, {
    as: 'master',
    query: { where, count: 1, limit: 0 },
  });
  return res.json.count;
}

beforeAll(async () => {
  t = await startService({ cloud: CLOUD_MODULE, allowClientClassCreation: true });
  ada = (await t.request('POST', '/users', { body: { username: 'ada', password: 'pw' } })).json;
});
afterAll(() => t.close());

describe('save triggers fire for every writer, master and non-master alike', () => {
  const writers: Array<[string, (title: string) => Promise<string>, { user: boolean; master: boolean }]> = [
    [
      'REST, a session user',
      async (title) =>
        (await t.request('POST', '/classes/Note', { sessionToken: ada.sessionToken, body: { title } })).json
          .objectId,
      { user: true, master: false },
    ],
    [
      'REST, the master key',
      async (title) =>
        (await t.request('POST', '/classes/Note', { as: 'master', body: { title } })).json.objectId,
      { user: false, master: true },
    ],
    [
      'a batch member',
      async (title) =>
        (
          await t.request('POST', '/batch', {
            sessionToken: ada.sessionToken,
            body: { requests: [{ method: 'POST', path: '/classes/Note', body: { title } }] },
          })
        ).json[0].success.objectId,
      { user: true, master: false },
    ],
    [
      'cloud code as the caller (api.asCaller)',
      async (title) =>
        (
          await t.request('POST', '/functions/createNote', {
            sessionToken: ada.sessionToken,
            body: { title },
          })
        ).json.result.objectId,
      { user: true, master: false },
    ],
    [
      'cloud code as master (api.asMaster)',
      async (title) =>
        (
          await t.request('POST', '/functions/createNoteAsMaster', {
            sessionToken: ada.sessionToken,
            body: { title },
          })
        ).json.result.objectId,
      { user: false, master: true },
    ],
  ];
  for (const [name, write, who] of writers) {
    it(`${name}: beforeSave changes the object, afterSave sees it and the shared context`, async () => {
      const title = `  ${name}  `;
      const objectId = await write(title);
      expect(objectId).toMatch(/^[A-Za-z0-9]{10}$/);
      const stored = await t.request('GET', `/classes/Note/${objectId}`, { as: 'master' });
      expect(stored.json.title).toBe(name);
      const [trace, ...more] = await traces({ trigger: 'afterSave', rowId: objectId });
      expect(more).toEqual([]);
      expect(trace).toMatchObject({
        title: name,
        isUpdate: false,
        stamp: `ctx-${name}`,
        master: who.master,
      });
      expect(trace!.user ?? null).toBe(who.user ? ada.objectId : null);
    });
  }

  it('a beforeSave that throws refuses the write: 142 with its text, nothing stored', async () => {
    const before = await count('Note');
    const res = await t.request('POST', '/classes/Note', {
      sessionToken: ada.sessionToken,
      body: { title: 'forbidden' },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 142, error: 'Notes may not be called forbidden.' });
    expect(await count('Note')).toBe(before);
    const batch = await t.request('POST', '/batch', {
      as: 'master',
      body: { requests: [{ method: 'POST', path: '/classes/Note', body: { title: 'forbidden' } }] },
    });
    expect(batch.json).toEqual([{ error: { code: 142, error: 'Notes may not be called forbidden.' } }]);
    expect(await count('Note')).toBe(before);
  });

  it('an update: beforeSave sees the original and changes the write; afterSave gets both rows', async () => {
    const { objectId } = (
      await t.request('POST', '/classes/Note', { as: 'master', body: { title: 'one', n: 1 } })
    ).json;
    const res = await t.request('PUT', `/classes/Note/${objectId}`, {
      as: 'master',
      body: { title: '  two ' },
    });
    expect(res.status).toBe(200);
    expect((await t.request('GET', `/classes/Note/${objectId}`, { as: 'master' })).json).toMatchObject({
      title: 'two',
      n: 1,
    });
    const updates = await traces({ trigger: 'afterSave', rowId: objectId, isUpdate: true });
    expect(updates).toHaveLength(1);
    expect(updates[0]!.title).toBe('two');
  });

  it('an afterSave that fails is logged and never undoes the committed write', async () => {
    const res = await t.request('POST', '/classes/Fragile', { as: 'master', body: { n: 1 } });
    expect(res.status).toBe(201);
    await t.service.cloud.triggers.idle();
    expect(await count('Fragile')).toBe(1);
  });
});

describe('delete triggers', () => {
  it('beforeDelete refuses (142, the row stays); afterDelete runs after a delete', async () => {
    const locked = (
      await t.request('POST', '/classes/Note', { as: 'master', body: { title: 'keep', locked: true } })
    ).json;
    const refused = await t.request('DELETE', `/classes/Note/${locked.objectId}`, { as: 'master' });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ code: 142, error: 'This note is locked.' });
    expect((await t.request('GET', `/classes/Note/${locked.objectId}`, { as: 'master' })).status).toBe(200);

    const loose = (
      await t.request('POST', '/classes/Note', { sessionToken: ada.sessionToken, body: { title: 'go' } })
    ).json;
    const gone = await t.request('DELETE', `/classes/Note/${loose.objectId}`, {
      sessionToken: ada.sessionToken,
    });
    expect(gone.status).toBe(200);
    expect(await traces({ trigger: 'afterDelete', rowId: loose.objectId })).toMatchObject([
      { user: ada.objectId, master: false },
    ]);
  });
});

describe('find triggers', () => {
  it('beforeFind narrows a find and a get; access control still applies to the rewritten query', async () => {
    const archived = (
      await t.request('POST', '/classes/Note', {
        as: 'master',
        body: { title: 'old', archived: true, tag: 'f' },
      })
    ).json;
    await t.request('POST', '/classes/Note', { as: 'master', body: { title: 'new', tag: 'f' } });
    await t.request('POST', '/classes/Note', { as: 'master', body: { title: 'private', tag: 'f', ACL: {} } });
    const found = await t.request('GET', '/classes/Note', {
      sessionToken: ada.sessionToken,
      query: { where: { tag: 'f' } },
    });
    expect(found.json.results.map((r: { title: string }) => r.title)).toEqual(['new']);
    const get = await t.request('GET', `/classes/Note/${archived.objectId}`, {
      sessionToken: ada.sessionToken,
    });
    expect(get.status).toBe(404);
    expect(get.json).toEqual({ code: 101, error: 'Object not found.' });
    // Cloud code reads pass the same triggers.
    const viaCloud = await t.request('POST', '/functions/findNotes', {
      sessionToken: ada.sessionToken,
      body: { tag: 'f' },
    });
    expect(viaCloud.json.result.map((r: { title: string }) => r.title)).toEqual(['new']);
  });

  it('afterFind changes results but never widens: no invented rows, no hidden fields, no secrets', async () => {
    await t.request('POST', '/classes/Secret', {
      as: 'master',
      body: { title: 'open', secretField: 's1', ACL: { '*': { read: true } } },
    });
    const hidden = (
      await t.request('POST', '/classes/Secret', {
        as: 'master',
        body: { title: 'closed', secretField: 's2', ACL: {} },
      })
    ).json;
    await t.request('PUT', '/schemas/Secret', {
      as: 'master',
      body: {
        classLevelPermissions: {
          find: { '*': true },
          get: { '*': true },
          count: { '*': true },
          create: {},
          update: {},
          delete: {},
          addField: {},
          protectedFields: { '*': ['secretField'] },
        },
      },
    });
    const res = await t.request('GET', '/classes/Secret', { sessionToken: ada.sessionToken });
    expect(res.json.results).toHaveLength(1);
    const [row] = res.json.results;
    expect(row).toMatchObject({ title: 'open', computed: 'yes' });
    expect(row).not.toHaveProperty('secretField');
    expect(row).not.toHaveProperty('password');
    expect(res.text).not.toContain('invented');
    expect(res.text).not.toContain('leaked');
    expect(
      (await t.request('GET', `/classes/Secret/${hidden.objectId}`, { sessionToken: ada.sessionToken }))
        .status,
    ).toBe(404);
    // The master key sees every field, the trigger still may not invent rows.
    const master = await t.request('GET', '/classes/Secret', { as: 'master' });
    expect(master.json.results.map((r: { title: string }) => r.title).sort()).toEqual(['closed', 'open']);
    expect(master.text).not.toContain('invented');
  });
});

describe('recursion', () => {
  it('a trigger that writes what triggers it ends with 141 after a bounded depth; nothing stored', async () => {
    const res = await t.request('POST', '/functions/startLoop', { as: 'master' });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(141);
    expect(res.json.error).toBe(
      'Cloud code nests deeper than 10 calls (a trigger that writes what triggers it?).',
    );
    expect(await count('Loop')).toBe(0);
  });
});

describe('login triggers', () => {
  it('beforeLogin refuses (142) and no session is made; afterLogin and afterLogout run', async () => {
    const banned = (await t.request('POST', '/users', { body: { username: 'banned', password: 'pw' } })).json;
    const refused = await t.request('POST', '/login', { body: { username: 'banned', password: 'pw' } });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ code: 142, error: 'This account is banned.' });
    const pointer = { __type: 'Pointer', className: '_User', objectId: banned.objectId };
    expect(await count('_Session', { user: pointer })).toBe(1);

    const login = await t.request('POST', '/login', { body: { username: 'ada', password: 'pw' } });
    expect(login.status).toBe(200);
    expect(await traces({ trigger: 'afterLogin', rowId: ada.objectId })).toMatchObject([
      { user: ada.objectId, master: false },
    ]);
    await t.request('POST', '/logout', { sessionToken: login.json.sessionToken });
    expect(await traces({ trigger: 'afterLogout', rowId: ada.objectId })).toHaveLength(1);
  });
});
