import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, findLeaks, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The permission draft preview and the effective class rules through the bff: the service's
 * answers as they are, a read-only console user previews class changes but not role changes (their
 * dry run runs the role's before-save triggers), and the rules are a GET every console user may ask.
 */

const A = '/bff/apps/test-app';
let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
let userId: string;
let roleId: string;

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  expect(
    (await admin.post(`${A}/schemas`, { className: 'Memo', fields: { text: { type: 'String' } } })).status,
  ).toBe(201);
  const clp = {
    classLevelPermissions: {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: { 'role:Writers': true },
      update: {},
      delete: {},
      addField: {},
      protectedFields: { '*': [] },
    },
  };
  expect((await admin.put(`${A}/schemas/Memo/clp`, clp)).status).toBe(200);
  const signUp = await t.service.request('POST', '/users', { body: { username: 'writer', password: 'pw' } });
  userId = signUp.json.objectId;
  roleId = (await admin.post(`${A}/roles`, { name: 'Writers' })).json.objectId;
});
afterAll(async () => {
  await t?.close();
});

describe('impact through the bff', () => {
  it('a role membership draft: the user who would join gains create', async () => {
    const res = await admin.post(`${A}/security/impact`, {
      className: 'Memo',
      roles: [{ roleId, users: { add: [userId] } }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.users).toEqual({ total: 1, considered: 1, sampled: false, bound: null });
    expect(res.json.operations.find((o: { operation: string }) => o.operation === 'create')).toEqual({
      operation: 'create',
      gain: 1,
      lose: 0,
      gainSample: [{ objectId: userId, username: 'writer' }],
      loseSample: [],
      anonymous: 'same',
    });
    // Nothing was written.
    const members = await admin.get(`${A}/roles/${roleId}`);
    expect(members.json.users).toEqual([]);
  });

  it('several changes of a class, in order', async () => {
    const res = await viewer.post(`${A}/security/impact`, {
      className: 'Memo',
      changes: [
        {
          kind: 'clp',
          classLevelPermissions: {
            find: {},
            get: { '*': true },
            count: { '*': true },
            create: { '*': true },
            update: { '*': true },
            delete: { '*': true },
            addField: { '*': true },
          },
        },
        { kind: 'protectedFields', protectedFields: { '*': ['text'] } },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.anonymous).toEqual({ read: 'loses', write: 'gains' });
  });

  it('read-only users cannot preview role changes; bad drafts are refused at the edge', async () => {
    const refused = await viewer.post(`${A}/security/impact`, {
      className: 'Memo',
      roles: [{ roleId, users: { add: [userId] } }],
    });
    expect([refused.status, refused.json]).toEqual([
      403,
      { code: 119, error: 'Read-only console users cannot preview role changes.' },
    ]);
    const bad = await admin.post(`${A}/security/impact`, { roles: [{ roleId, users: { drop: [userId] } }] });
    expect([bad.status, bad.json.code]).toEqual([400, 107]);
    expect(bad.json.error).toMatch(/^Invalid impact request: roles\.0\.users: /);
    // The service's own refusals come through with their code and text.
    const empty = await admin.post(`${A}/security/impact`, { className: 'Memo' });
    expect([empty.status, empty.json]).toEqual([
      400,
      { code: 102, error: 'The draft is empty: give change, changes or roles.' },
    ]);
  });
});

describe('GET rules', () => {
  for (const who of ['admin', 'viewer'] as const) {
    it(`${who}: _Installation find is fixed to the master key`, async () => {
      const res = await (who === 'admin' ? admin : viewer).get(`${A}/security/rules/_Installation`);
      expect(res.status, res.text).toBe(200);
      expect(res.json.className).toBe('_Installation');
      expect(res.json.operations.find((o: { operation: string }) => o.operation === 'find')).toMatchObject({
        fixed: true,
        builtIn: { rule: 'system.masterOnly', reason: 'find on _Installation is master-only' },
      });
    });
  }

  it('an unknown or malformed class answers 4xx', async () => {
    const missing = await admin.get(`${A}/security/rules/Nope`);
    expect([missing.status, missing.json]).toEqual([400, { code: 103, error: 'Class Nope does not exist.' }]);
    const bad = await admin.get(`${A}/security/rules/1bad`);
    expect([bad.status, bad.json.code]).toEqual([400, 107]);
  });

  it('no configured key in any answer', () => {
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
