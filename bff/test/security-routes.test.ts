import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READ_ONLY_POSTS } from '../src/security.ts';
import { type BffFetch, findLeaks, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The Security API through the bff: explain, evaluate and impact, proxied with the master key the
 * bff holds. They change nothing, so read-only console users may call them; every other POST stays
 * refused to them. No configured key reaches any answer.
 */

const A = '/bff/apps/test-app';
let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
let userId: string;
let sessionToken: string;
let rowId: string;

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  expect(
    (
      await admin.post(`${A}/schemas`, {
        className: 'Note',
        fields: { text: { type: 'String' }, secret: { type: 'String' } },
      })
    ).status,
  ).toBe(201);
  const clp = {
    classLevelPermissions: {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: { requiresAuthentication: true },
      update: { requiresAuthentication: true },
      delete: { requiresAuthentication: true },
      addField: {},
      protectedFields: { '*': ['secret'] },
    },
  };
  expect((await admin.put(`${A}/schemas/Note/clp`, clp)).status).toBe(200);
  const signUp = await t.service.request('POST', '/users', { body: { username: 'reader', password: 'pw' } });
  expect(signUp.status).toBe(201);
  userId = signUp.json.objectId;
  sessionToken = signUp.json.sessionToken;
  rowId = (
    await admin.post(`${A}/classes/Note`, { text: 'hi', secret: 's', ACL: { [userId]: { read: true } } })
  ).json.objectId;
});
afterAll(async () => {
  await t?.close();
});

describe('the Security API through the bff', () => {
  for (const who of ['admin', 'viewer'] as const) {
    const as = () => (who === 'admin' ? admin : viewer);

    it(`${who}: explain answers the service's explanation`, async () => {
      const res = await as().post(`${A}/security/explain`, {
        operation: 'get',
        className: 'Note',
        objectId: rowId,
        viewpoint: { kind: 'user', userId },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.json).toMatchObject({ allowed: true, decidedBy: 'acl', viewpoint: { username: 'reader' } });
      expect(res.json.layers[2]).toMatchObject({ layer: 'protectedFields', hidden: ['secret'] });
      const anon = await as().post(`${A}/security/explain`, {
        operation: 'get',
        className: 'Note',
        objectId: rowId,
        viewpoint: { kind: 'anonymous' },
      });
      expect(anon.json).toMatchObject({
        allowed: false,
        decidedBy: 'acl',
        code: 101,
        message: 'Object not found.',
      });
    });

    it(`${who}: evaluate reads as the user${who === 'admin' ? ' and dry-runs writes' : ''}`, async () => {
      const read = await as().post(`${A}/security/evaluate`, {
        viewpoint: { kind: 'user', userId },
        method: 'GET',
        path: '/classes/Note',
      });
      const real = await t.service.request('GET', '/classes/Note', { sessionToken });
      expect(read.status, read.text).toBe(200);
      expect(read.json).toMatchObject({ status: 200, dryRun: false, body: real.json });
      if (who === 'viewer') return;
      const write = await as().post(`${A}/security/evaluate`, {
        viewpoint: { kind: 'user', userId },
        method: 'POST',
        path: '/classes/Note',
        body: { text: 'dry' },
      });
      expect(write.json).toMatchObject({
        status: 201,
        dryRun: true,
        wouldHave: { op: 'create', after: { text: 'dry' } },
      });
      const count = await admin.get(`${A}/classes/Note/count`);
      expect(count.json.count).toBe(1);
    });

    it(`${who}: impact counts who gains`, async () => {
      const res = await as().post(`${A}/security/impact`, {
        className: 'Note',
        change: { kind: 'acl', objectIds: [rowId], ACL: { '*': { read: true } } },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.json).toMatchObject({
        users: { total: 1, considered: 1, sampled: false, bound: null },
        anonymous: { read: 'gains', write: 'same' },
        read: { gain: 0, lose: 0 },
      });
    });
  }

  it('read-only users evaluate reads only: a dry-run write is refused before it reaches the service', async () => {
    const sessions = await t.service.request('GET', '/sessions', { sessionToken });
    const res = await viewer.post(`${A}/security/evaluate`, {
      viewpoint: { kind: 'user', userId },
      method: 'DELETE',
      path: `/sessions/${sessions.json.results[0].objectId}`,
    });
    expect([res.status, res.json]).toEqual([
      403,
      { code: 119, error: 'Read-only console users may evaluate reads (GET) only.' },
    ]);
  });

  it('a dry run of a session delete hides the session token', async () => {
    const sessions = await t.service.request('GET', '/sessions', { sessionToken });
    const res = await admin.post(`${A}/security/evaluate`, {
      viewpoint: { kind: 'user', userId },
      method: 'DELETE',
      path: `/sessions/${sessions.json.results[0].objectId}`,
    });
    expect(res.json).toMatchObject({
      status: 200,
      dryRun: true,
      wouldHave: { op: 'delete', before: { sessionToken: '[FILTERED]' } },
    });
    expect(res.text).not.toContain(sessionToken);
    expect((await t.service.request('GET', '/users/me', { sessionToken })).status).toBe(200);
  });

  it('bad bodies are refused at the edge with 400 and code 107', async () => {
    const cases: Array<[string, unknown, string]> = [
      [
        'explain',
        { operation: 'peek', className: 'Note', viewpoint: { kind: 'anonymous' } },
        `Invalid explain request: operation: Invalid option: expected one of "find"|"get"|"count"|"create"|"update"|"delete"|"addField"`,
      ],
      [
        'evaluate',
        { viewpoint: { kind: 'anonymous' }, method: 'GET', path: '/schemas' },
        'Invalid evaluate request: path: must be /classes/<C>[/<id>], /users, /roles, /installations or /sessions (with an optional /<id>)',
      ],
      [
        'impact',
        { className: 'Note', change: { kind: 'owner' } },
        "Invalid impact request: change.kind: Invalid discriminator value. Expected 'acl' | 'clp' | 'protectedFields'",
      ],
    ];
    for (const [route, body, error] of cases) {
      const res = await viewer.post(`${A}/security/${route}`, body);
      expect([res.status, res.json], route).toEqual([400, { code: 107, error }]);
    }
  });

  it("the service's refusals come through with their code and text", async () => {
    const res = await admin.post(`${A}/security/explain`, {
      operation: 'get',
      className: 'Note',
      viewpoint: { kind: 'user', userId: 'nobody' },
    });
    expect([res.status, res.json]).toEqual([404, { code: 101, error: 'Object not found.' }]);
    const cls = await admin.post(`${A}/security/explain`, {
      operation: 'get',
      className: 'Missing',
      viewpoint: { kind: 'anonymous' },
    });
    expect([cls.status, cls.json]).toEqual([400, { code: 103, error: 'Class Missing does not exist.' }]);
  });

  it('read-only users still cannot make any other POST', async () => {
    const refused = 'Read-only console users cannot change anything.';
    for (const [path, body] of [
      [`${A}/classes/Note`, { text: 'x' }],
      [`${A}/roles`, { name: 'Nope' }],
      [`${A}/security/explain/extra`, {}],
      [`${A}/security`, {}],
      [`${A}/schemas`, { className: 'Other' }],
    ] as const) {
      const res = await viewer.post(path, body);
      expect([res.status, res.json], path).toEqual([403, { code: 119, error: refused }]);
    }
    // The exemption names POST routes only: the same paths with PUT or DELETE stay refused.
    for (const method of ['PUT', 'DELETE']) {
      const res = await viewer(`${A}/security/explain`, { method, body: {} });
      expect([res.status, res.json.error]).toEqual([403, refused]);
    }
    expect(READ_ONLY_POSTS.map(String)).toEqual([
      String(/^\/apps\/[^/]+\/security\/(?:explain|evaluate|impact)\/?$/),
      String(/^\/apps\/[^/]+\/api-console(?:\/curl)?\/?$/),
    ]);
  });

  it('no configured key in any answer', () => {
    expect(t.responses.length).toBeGreaterThan(10);
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
