import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WriteEvent } from '../src/index.ts';
import { margin, SecurityQueries } from '../src/security/queries.ts';
import { createClass, createRole, createRow, createUser, type TestUser } from './helpers/access-world.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * The Security API (docs/security-api.md) over REST: explain, evaluate as a viewpoint and the
 * impact of a proposed change, with exact statuses, codes and texts for good and bad input.
 */

let t: TestService;
let ann: TestUser; // member of Admins, which Editors' `roles` holds: ann holds Editors through Admins
let bob: TestUser;
let carol: TestUser;
let editorsOnly: string; // a Post row readable by role:Editors only
let publicRow: string;

const MASTER_ONLY = { code: 119, error: 'unauthorized: master key is required' };

beforeAll(async () => {
  t = await startService();
  ann = await createUser(t, 'ann');
  bob = await createUser(t, 'bob');
  carol = await createUser(t, 'carol');
  const admins = await createRole(t, 'Admins', { users: [ann.id] });
  await createRole(t, 'Editors', { roles: [admins] });
  await createClass(
    t,
    'Post',
    {
      title: { type: 'String' },
      secret: { type: 'String' },
      owner: { type: 'Pointer', targetClass: '_User' },
    },
    {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: { requiresAuthentication: true },
      update: { 'role:Editors': true },
      delete: {},
      addField: {},
      protectedFields: { '*': ['secret'], 'role:Editors': ['secret', 'title'] },
    },
  );
  editorsOnly = await createRow(t, 'Post', {
    title: 'draft',
    secret: 's1',
    ACL: { 'role:Editors': { read: true, write: true } },
  });
  publicRow = await createRow(t, 'Post', { title: 'hello', secret: 's2' });
});
afterAll(async () => {
  await t?.close();
});

const explain = (body: unknown, as: 'master' | 'rest' = 'master') =>
  t.request('POST', '/security/explain', { as, body });
const evaluate = (body: unknown) => t.request('POST', '/security/evaluate', { as: 'master', body });
const impact = (body: unknown) => t.request('POST', '/security/impact', { as: 'master', body });

describe('master key only', () => {
  for (const path of ['/security/explain', '/security/evaluate', '/security/impact']) {
    it(`${path} refuses application keys and a user session as /schemas does`, async () => {
      const schemas = await t.request('GET', '/schemas', { as: 'rest' });
      const res = await t.request('POST', path, { as: 'rest', body: {} });
      expect([res.status, res.json]).toEqual([schemas.status, schemas.json]);
      expect([res.status, res.json]).toEqual([403, MASTER_ONLY]);
      const withSession = await t.request('POST', path, { sessionToken: ann.token, body: {} });
      expect([withSession.status, withSession.json]).toEqual([403, MASTER_ONLY]);
    });
  }
});

describe('POST /security/explain', () => {
  it('names the ACL entry that granted, through the role chain, and the protectedFields intersection', async () => {
    const res = await explain({
      operation: 'get',
      className: 'Post',
      objectId: editorsOnly,
      viewpoint: { kind: 'user', userId: ann.id },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({
      allowed: true,
      decidedBy: 'acl',
      viewpoint: {
        kind: 'user',
        userId: ann.id,
        username: 'ann',
        roles: [
          { name: 'Admins', chain: ['Admins'] },
          { name: 'Editors', chain: ['Admins', 'Editors'] },
        ],
      },
      layers: [
        {
          layer: 'clp',
          allowed: true,
          decidedBy: 'clp',
          rule: 'clp.public',
          entry: '*',
          reason: 'get on Post is public',
          skipped: false,
        },
        {
          layer: 'acl',
          allowed: true,
          decidedBy: 'acl',
          rule: 'acl.grant',
          entry: 'role:Editors',
          roleChain: ['Admins', 'Editors'],
          reason: "the row's ACL grants read to members of Editors",
          skipped: false,
        },
        {
          layer: 'protectedFields',
          allowed: true,
          decidedBy: 'protectedFields',
          rule: 'protectedFields.view',
          hidden: ['secret'],
          groups: [
            { pattern: '*', fields: ['secret'] },
            { pattern: 'role:Editors', fields: ['secret', 'title'] },
          ],
          reason: 'groups * [secret], role:Editors [secret, title] apply; their intersection hides secret',
          skipped: false,
        },
      ],
      toAllow: [],
    });
    // The real read agrees: the row, without secret.
    const real = await t.request('GET', `/classes/Post/${editorsOnly}`, { sessionToken: ann.token });
    expect(real.status).toBe(200);
    expect(real.json.title).toBe('draft');
    expect('secret' in real.json).toBe(false);
  });

  it('a refused read names the ACL and what would allow it', async () => {
    const res = await explain({
      operation: 'get',
      className: 'Post',
      objectId: editorsOnly,
      viewpoint: { kind: 'user', userId: bob.id },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      allowed: false,
      decidedBy: 'acl',
      code: 101,
      message: 'Object not found.',
    });
    expect(res.json.layers.map((l: { layer: string; skipped: boolean }) => [l.layer, l.skipped])).toEqual([
      ['clp', false],
      ['acl', false],
      ['protectedFields', true],
    ]);
    expect(res.json.layers[1]).toMatchObject({ allowed: false, rule: 'acl.none' });
    expect(res.json.toAllow).toEqual([
      `Add ${bob.id} (user bob (${bob.id})) to this row's read ACL.`,
      "Add * (the public) to this row's read ACL.",
    ]);
    const real = await t.request('GET', `/classes/Post/${editorsOnly}`, { sessionToken: bob.token });
    expect([real.status, real.json]).toEqual([404, { code: 101, error: 'Object not found.' }]);
  });

  it('a CLP refusal skips the ACL and answers the CLP code and text', async () => {
    const res = await explain({
      operation: 'update',
      className: 'Post',
      objectId: publicRow,
      body: { title: 'x' },
      viewpoint: { kind: 'anonymous' },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      allowed: false,
      decidedBy: 'clp',
      code: 119,
      message: 'Permission denied for action update on class Post.',
      viewpoint: { kind: 'anonymous', roles: [] },
      toAllow: ['Grant update on Post to * (the public) in the class-level permissions.'],
    });
    expect(res.json.layers[0]).toMatchObject({ layer: 'clp', allowed: false, rule: 'clp.none' });
    expect(res.json.layers[1]).toMatchObject({ layer: 'acl', skipped: true });
  });

  it('requiresAuthentication refuses anonymous create with 101 before anything else', async () => {
    const res = await explain({
      operation: 'create',
      className: 'Post',
      body: { title: 'x' },
      viewpoint: { kind: 'anonymous' },
    });
    expect(res.json).toMatchObject({
      allowed: false,
      decidedBy: 'clp',
      code: 101,
      message: 'Permission denied, user needs to be authenticated.',
    });
    expect(res.json.layers[0]).toMatchObject({
      rule: 'clp.requiresAuthentication',
      entry: 'requiresAuthentication',
    });
    expect(res.json.toAllow[0]).toBe('Sign in as a user: create on Post requires authentication.');
  });

  it('a body that adds a field asks addField, which is refused', async () => {
    const res = await explain({
      operation: 'create',
      className: 'Post',
      body: { title: 'x', brandNew: 1 },
      viewpoint: { kind: 'user', userId: bob.id },
    });
    expect(res.json).toMatchObject({
      allowed: false,
      decidedBy: 'clp',
      code: 119,
      message: 'Permission denied for action addField on class Post.',
    });
    expect(res.json.layers[1]).toMatchObject({ layer: 'clp', operation: 'addField', allowed: false });
    const real = await t.request('POST', '/classes/Post', { sessionToken: bob.token, body: { brandNew: 1 } });
    expect([real.status, real.json]).toEqual([
      400,
      { code: 119, error: 'Permission denied for action addField on class Post.' },
    ]);
  });

  it('an ad-hoc role set holds the roles that inherit from it', async () => {
    const res = await explain({
      operation: 'update',
      className: 'Post',
      objectId: editorsOnly,
      viewpoint: { kind: 'roles', roles: ['Admins'] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({
      allowed: true,
      viewpoint: {
        kind: 'roles',
        roles: [
          { name: 'Admins', chain: ['Admins'] },
          { name: 'Editors', chain: ['Admins', 'Editors'] },
        ],
      },
    });
    expect(res.json.layers[0]).toMatchObject({
      rule: 'clp.principal',
      entry: 'role:Editors',
      roleChain: ['Admins', 'Editors'],
    });
  });

  it('a find without a row skips the ACL with a reason', async () => {
    const res = await explain({ operation: 'find', className: 'Post', viewpoint: { kind: 'anonymous' } });
    expect(res.json.allowed).toBe(true);
    expect(res.json.layers[1]).toEqual({
      layer: 'acl',
      skipped: true,
      reason:
        'no row was named: a find or count leaves out the rows whose ACL does not grant read, without an error',
    });
    expect(res.json.layers[2]).toMatchObject({ layer: 'protectedFields', hidden: ['secret'] });
  });

  it('bad input answers a clear 4xx', async () => {
    const cases: Array<[unknown, number, number, string]> = [
      [
        {
          operation: 'get',
          className: 'Post',
          objectId: publicRow,
          viewpoint: { kind: 'user', userId: 'nobody' },
        },
        404,
        101,
        'Object not found.',
      ],
      [
        { operation: 'get', className: 'Post', viewpoint: { kind: 'robot' } },
        400,
        102,
        'viewpoint.kind must be user, anonymous or roles.',
      ],
      [
        { operation: 'get', className: 'Post' },
        400,
        102,
        'viewpoint must be an object with a kind: user, anonymous or roles.',
      ],
      [
        { operation: 'get', className: 'Post', viewpoint: { kind: 'user' } },
        400,
        102,
        'viewpoint.userId must be the objectId of a _User.',
      ],
      [
        { operation: 'get', className: 'Post', viewpoint: { kind: 'roles', roles: ['Ghosts'] } },
        404,
        101,
        'Role Ghosts does not exist.',
      ],
      [
        { operation: 'get', className: 'Nope', viewpoint: { kind: 'anonymous' } },
        400,
        103,
        'Class Nope does not exist.',
      ],
      [
        { operation: 'peek', className: 'Post', viewpoint: { kind: 'anonymous' } },
        400,
        102,
        'operation must be one of find, get, count, create, update, delete, addField.',
      ],
      [
        { operation: 'update', className: 'Post', viewpoint: { kind: 'anonymous' } },
        400,
        102,
        'objectId is required for update.',
      ],
      [
        { operation: 'get', className: 'Post', viewpoint: { kind: 'anonymous' }, extra: 1 },
        400,
        102,
        'Unknown key: extra.',
      ],
      [[1], 400, 107, 'The request body must be a JSON object.'],
    ];
    for (const [body, status, code, error] of cases) {
      const res = await explain(body);
      expect([res.status, res.json], JSON.stringify(body)).toEqual([status, { code, error }]);
    }
  });
});

describe('POST /security/evaluate', () => {
  it('a read answers exactly what the user gets with a real session', async () => {
    const query = {
      where: { title: { $exists: true } },
      order: '-createdAt',
      keys: 'title,owner',
      include: 'owner',
      count: 1,
    };
    for (const user of [ann, bob]) {
      const res = await evaluate({
        viewpoint: { kind: 'user', userId: user.id },
        method: 'GET',
        path: '/classes/Post',
        query,
      });
      const real = await t.request('GET', '/classes/Post', { sessionToken: user.token, query });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ status: 200, dryRun: false });
      expect(typeof res.json.ms).toBe('number');
      expect(res.json.body).toEqual(real.json);
    }
    const one = await evaluate({
      viewpoint: { kind: 'user', userId: bob.id },
      method: 'GET',
      path: `/classes/Post/${editorsOnly}`,
    });
    expect(one.json).toMatchObject({
      status: 404,
      body: { code: 101, error: 'Object not found.' },
      dryRun: false,
    });
    const anon = await evaluate({ viewpoint: { kind: 'anonymous' }, method: 'GET', path: '/classes/Post' });
    const realAnon = await t.request('GET', '/classes/Post', { as: 'rest' });
    expect(anon.json.body).toEqual(realAnon.json);
  });

  it("a user's sessions read as with the user's own session, without creating one", async () => {
    const sessions = () => t.request('GET', '/sessions', { as: 'master', query: { count: 1, limit: 0 } });
    const before = (await sessions()).json.count;
    const res = await evaluate({
      viewpoint: { kind: 'user', userId: ann.id },
      method: 'GET',
      path: '/sessions',
    });
    const real = await t.request('GET', '/sessions', { sessionToken: ann.token });
    expect(res.json).toMatchObject({ status: 200, dryRun: false });
    expect(res.json.body).toEqual(real.json);
    expect(res.json.body.results).toHaveLength(1);
    expect((await sessions()).json.count).toBe(before);
  });

  it('an ad-hoc role set reads and writes with the roles it holds', async () => {
    const read = await evaluate({
      viewpoint: { kind: 'roles', roles: ['Admins'] },
      method: 'GET',
      path: `/classes/Post/${editorsOnly}`,
    });
    expect(read.json).toMatchObject({ status: 200, body: { objectId: editorsOnly, title: 'draft' } });
    expect('secret' in read.json.body).toBe(false);
    const none = await evaluate({
      viewpoint: { kind: 'roles', roles: [] },
      method: 'GET',
      path: `/classes/Post/${editorsOnly}`,
    });
    expect(none.json).toMatchObject({ status: 404, body: { code: 101, error: 'Object not found.' } });
  });

  it('a dry-run write is checked and answered, then rolled back: nothing stored, no event', async () => {
    const events: WriteEvent[] = [];
    const stop = t.service.data.core.events.subscribe((e) => events.push(e));
    try {
      const before = await t.request('GET', '/classes/Post', { as: 'master', query: { count: 1, limit: 0 } });
      const created = await evaluate({
        viewpoint: { kind: 'user', userId: bob.id },
        method: 'POST',
        path: '/classes/Post',
        body: { title: 'dry' },
      });
      expect(created.status, created.text).toBe(200);
      expect(created.json).toMatchObject({
        status: 201,
        dryRun: true,
        wouldHave: { op: 'create', className: 'Post', before: null, after: { title: 'dry' } },
      });
      const id = created.json.body.objectId;
      expect(created.json.wouldHave.objectId).toBe(id);
      const after = await t.request('GET', '/classes/Post', { as: 'master', query: { count: 1, limit: 0 } });
      expect(after.json.count).toBe(before.json.count);
      const gone = await t.request('GET', `/classes/Post/${id}`, { as: 'master' });
      expect(gone.status).toBe(404);

      const updated = await evaluate({
        viewpoint: { kind: 'user', userId: ann.id },
        method: 'PUT',
        path: `/classes/Post/${editorsOnly}`,
        body: { title: 'changed' },
      });
      expect(updated.json).toMatchObject({
        status: 200,
        dryRun: true,
        wouldHave: { op: 'update', before: { title: 'draft' }, after: { title: 'changed' } },
      });
      const row = await t.request('GET', `/classes/Post/${editorsOnly}`, { as: 'master' });
      expect(row.json.title).toBe('draft');
      expect(events).toEqual([]);
    } finally {
      stop();
    }
  });

  it('a refused dry run answers the real refusal', async () => {
    const res = await evaluate({
      viewpoint: { kind: 'user', userId: bob.id },
      method: 'PUT',
      path: `/classes/Post/${publicRow}`,
      body: { title: 'x' },
    });
    expect(res.json).toMatchObject({
      status: 400,
      body: { code: 119, error: 'Permission denied for action update on class Post.' },
      dryRun: true,
    });
    const del = await evaluate({
      viewpoint: { kind: 'anonymous' },
      method: 'DELETE',
      path: `/classes/Post/${publicRow}`,
    });
    expect(del.json).toMatchObject({
      status: 400,
      body: { code: 119, error: 'Permission denied for action delete on class Post.' },
      dryRun: true,
    });
  });

  it('bad input answers a clear 4xx', async () => {
    const base = { viewpoint: { kind: 'anonymous' }, method: 'GET', path: '/classes/Post' };
    const cases: Array<[unknown, number, number, string]> = [
      [
        { ...base, path: '/schemas' },
        400,
        102,
        'path must be /classes/<C>, /classes/<C>/<id>, /users, /users/<id>, /roles, /roles/<id>, /installations, /installations/<id>, /sessions or /sessions/<id>.',
      ],
      [{ ...base, method: 'PATCH' }, 400, 102, 'method must be GET, POST, PUT or DELETE.'],
      [{ ...base, viewpoint: { kind: 'user', userId: 'nobody' } }, 404, 101, 'Object not found.'],
      [
        { ...base, viewpoint: 'me' },
        400,
        102,
        'viewpoint must be an object with a kind: user, anonymous or roles.',
      ],
      [{ ...base, query: [] }, 400, 102, 'query must be an object.'],
      [{ ...base, other: true }, 400, 102, 'Unknown key: other.'],
    ];
    for (const [body, status, code, error] of cases) {
      const res = await evaluate(body);
      expect([res.status, res.json], JSON.stringify(body)).toEqual([status, { code, error }]);
    }
  });
});

describe('POST /security/impact', () => {
  it('an ACL change counts the users who gain read, and anonymous', async () => {
    const res = await impact({
      className: 'Post',
      change: { kind: 'acl', objectIds: [editorsOnly], ACL: { '*': { read: true } } },
    });
    expect(res.status, res.text).toBe(200);
    const sample = (u: TestUser) => ({ objectId: u.id, username: u.username });
    expect(res.json.users).toEqual({ total: 3, considered: 3, sampled: false, bound: null });
    expect(res.json.anonymous).toEqual({ read: 'gains', write: 'same' });
    expect(res.json.read.gain).toBe(2);
    expect(res.json.read.lose).toBe(0);
    expect(res.json.read.gainSample).toEqual(expect.arrayContaining([sample(bob), sample(carol)]));
    // ann could write through Editors; the new ACL grants no write: she loses it.
    expect(res.json.write).toEqual({ gain: 0, lose: 1, gainSample: [], loseSample: [sample(ann)] });
    expect(res.json.fields).toEqual([]);
  });

  it('a CLP change that requires authentication takes reading from anonymous only', async () => {
    const res = await impact({
      className: 'Post',
      change: {
        kind: 'clp',
        classLevelPermissions: {
          find: { requiresAuthentication: true },
          get: { requiresAuthentication: true },
          count: { '*': true },
          create: { requiresAuthentication: true },
          update: { 'role:Editors': true },
          delete: {},
          addField: {},
        },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.anonymous).toEqual({ read: 'loses', write: 'same' });
    expect(res.json.read).toMatchObject({ gain: 0, lose: 0 });
    expect(res.json.write).toMatchObject({ gain: 0, lose: 0 });
  });

  it('a protectedFields change counts who starts seeing a field', async () => {
    const res = await impact({
      className: 'Post',
      change: { kind: 'protectedFields', protectedFields: { '*': [] } },
    });
    expect(res.status, res.text).toBe(200);
    const secret = res.json.fields.find((f: { field: string }) => f.field === 'secret');
    expect(secret).toMatchObject({ visibleTo: 3, hiddenFrom: 0 });
    // ann's Editors group hid title as well, intersected with * [secret]: title was visible, still is.
    const title = res.json.fields.find((f: { field: string }) => f.field === 'title');
    expect(title).toMatchObject({ visibleTo: 0, hiddenFrom: 0 });
  });

  it('above the exact limit, a uniform sample is counted and scaled, with its 95% bound', async () => {
    const callers = t.service.callers;
    const sampled = new SecurityQueries(t.service.data, (id) => callers.forUser(id), 2);
    const res = await sampled.impact({
      className: 'Post',
      change: { kind: 'acl', objectIds: [editorsOnly], ACL: { '*': { read: true, write: true } } },
    });
    expect(res.users).toEqual({ total: 3, considered: 2, sampled: true, bound: 2 });
    // bob and carol gain write on that row, ann had it: 0 or 1 gainer in a sample of 2, scaled to 3.
    expect(res.write.lose).toBe(0);
    expect([0, 2, 3]).toContain(res.write.gain);
    expect(margin(100_000, 10_000)).toBe(930);
  });

  it('bad input answers a clear 4xx', async () => {
    const cases: Array<[unknown, number, number, string]> = [
      [
        { className: 'Post', change: { kind: 'owner' } },
        400,
        102,
        'change.kind must be acl, clp or protectedFields.',
      ],
      [
        { className: 'Nope', change: { kind: 'clp', classLevelPermissions: {} } },
        400,
        103,
        'Class Nope does not exist.',
      ],
      [
        { className: 'Post', change: { kind: 'acl', objectIds: [], ACL: {} } },
        400,
        102,
        'change.objectIds must list 1 to 1000 objectIds.',
      ],
      [
        { className: 'Post', change: { kind: 'acl', objectIds: ['missing'], ACL: {} } },
        404,
        101,
        'No Post row has id missing.',
      ],
    ];
    for (const [body, status, code, error] of cases) {
      const res = await impact(body);
      expect([res.status, res.json], JSON.stringify(body)).toEqual([status, { code, error }]);
    }
  });
});

describe('dry runs and cloud code', () => {
  let c: TestService;
  beforeAll(async () => {
    c = await startService({ cloud: CLOUD_MODULE, allowClientClassCreation: true });
    await c.request('POST', '/classes/Note', { as: 'master', body: { title: 'seed' } });
    // The seed's after-save trigger logs once it has committed: counted before the tests begin.
    for (let i = 0; i < 200 && (await logged()) < 1; i++) await new Promise((r) => setTimeout(r, 25));
  });
  afterAll(async () => {
    await c?.close();
  });
  const logged = async () =>
    (await c.request('GET', '/classes/TriggerLog', { as: 'master', query: { count: 1, limit: 0 } })).json
      .count ?? 0;

  it('before-save triggers run (and may refuse); after-save triggers do not', async () => {
    const before = await logged();
    const refused = await c.request('POST', '/security/evaluate', {
      as: 'master',
      body: {
        viewpoint: { kind: 'anonymous' },
        method: 'POST',
        path: '/classes/Note',
        body: { title: 'forbidden' },
      },
    });
    expect(refused.json).toMatchObject({
      status: 400,
      body: { code: 142, error: 'Notes may not be called forbidden.' },
      dryRun: true,
    });
    const changed = await c.request('POST', '/security/evaluate', {
      as: 'master',
      body: {
        viewpoint: { kind: 'anonymous' },
        method: 'POST',
        path: '/classes/Note',
        body: { title: '  padded  ' },
      },
    });
    expect(changed.json).toMatchObject({
      status: 201,
      dryRun: true,
      wouldHave: { after: { title: 'padded' } },
    });
    // The real write runs the after-save trigger, which logs a row: the dry runs logged none.
    expect(await logged()).toBe(before);
    const real = await c.request('POST', '/classes/Note', { as: 'rest', body: { title: 'real' } });
    expect(real.status).toBe(201);
    await expect.poll(logged).toBe(before + 1);
    expect(
      (
        await c.request('GET', '/classes/Note', {
          as: 'master',
          query: { where: { title: 'padded' }, count: 1, limit: 0 },
        })
      ).json.count,
    ).toBe(0);
  });
});
