import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRole,
  createRow,
  createUser,
  pointer,
  type TestUser,
} from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * POST /security/impact (docs/security-api.md) as the deciders' own answer: per operation, before
 * and after the whole draft (CLP, protectedFields, row ACLs, role membership and inheritance),
 * every layer, with exact counts, samples and error texts. impact-property.test.ts holds the
 * preview equal to what REST answers once a random draft is applied.
 */

let t: TestService;
let ann: TestUser; // member of Admins; Editors' `roles` holds Admins, so ann holds Editors too
let bob: TestUser;
let carol: TestUser;
let admins: string;
let editors: string;
let rome: string; // role:Editors read and write, no owner

const BASE = {
  find: { '*': true },
  get: { '*': true },
  count: { '*': true },
  create: { 'role:Editors': true },
  update: { 'role:Editors': true },
  delete: {},
  addField: {},
  protectedFields: { '*': [] },
};

beforeAll(async () => {
  t = await startService();
  ann = await createUser(t, 'ann');
  bob = await createUser(t, 'bob');
  carol = await createUser(t, 'carol');
  admins = await createRole(t, 'Admins', { users: [ann.id] });
  editors = await createRole(t, 'Editors', { roles: [admins] });
  await createClass(
    t,
    'City',
    {
      name: { type: 'String' },
      city: { type: 'String' },
      owner: { type: 'Pointer', targetClass: '_User' },
    },
    BASE,
  );
  // oslo: public read and write, owner bob.
  await createRow(t, 'City', {
    name: 'oslo',
    city: 'Oslo',
    owner: pointer('_User', bob.id),
    ACL: { '*': { read: true, write: true } },
  });
  rome = await createRow(t, 'City', {
    name: 'rome',
    city: 'Rome',
    ACL: { 'role:Editors': { read: true, write: true } },
  });
});
afterAll(async () => {
  await t?.close();
});

const impact = (body: unknown) => t.request('POST', '/security/impact', { as: 'master', body });
const who = (...users: TestUser[]) =>
  users
    .map((u) => ({ objectId: u.id, username: u.username }))
    .sort((a, b) => a.objectId.localeCompare(b.objectId));

interface Shift {
  operation?: string;
  gain: number;
  lose: number;
  gainSample: Array<{ objectId: string }>;
  loseSample: Array<{ objectId: string }>;
  anonymous?: string;
}
const sorted = (s: Shift) => ({
  ...s,
  gainSample: [...s.gainSample].sort((a, b) => a.objectId.localeCompare(b.objectId)),
  loseSample: [...s.loseSample].sort((a, b) => a.objectId.localeCompare(b.objectId)),
});
const operation = (json: { operations: Shift[] }, op: string) =>
  sorted(json.operations.find((o) => o.operation === op)!);
const shift = (anonymous: string, gain: TestUser[] = [], lose: TestUser[] = []) => ({
  gain: gain.length,
  lose: lose.length,
  gainSample: who(...gain),
  loseSample: who(...lose),
  anonymous,
});

describe('per operation, every caller', () => {
  it('removing public find: anonymous and every user lose find though get stays public', async () => {
    const res = await impact({
      className: 'City',
      change: { kind: 'clp', classLevelPermissions: { ...BASE, find: {} } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.anonymous).toEqual({ read: 'loses', write: 'same' });
    expect(operation(res.json, 'find')).toEqual({
      operation: 'find',
      ...shift('loses', [], [ann, bob, carol]),
    });
    for (const op of ['get', 'count', 'create', 'update', 'delete', 'addField'])
      expect(operation(res.json, op), op).toEqual({ operation: op, ...shift('same') });
    expect(sorted(res.json.read)).toEqual({
      gain: 0,
      lose: 3,
      gainSample: [],
      loseSample: who(ann, bob, carol),
    });
    expect(res.json.write).toEqual({ gain: 0, lose: 0, gainSample: [], loseSample: [] });
    expect(res.json.classes.map((c: { className: string }) => c.className)).toEqual(['City']);
  });

  it('pointer permissions: each user loses the rows that do not point at them', async () => {
    const res = await impact({
      className: 'City',
      change: { kind: 'clp', classLevelPermissions: { ...BASE, find: { pointerFields: ['owner'] } } },
    });
    expect(res.status, res.text).toBe(200);
    // bob owns oslo and could not read rome before: he keeps exactly what he had.
    expect(operation(res.json, 'find')).toEqual({ operation: 'find', ...shift('loses', [], [ann, carol]) });
    expect(operation(res.json, 'get')).toEqual({ operation: 'get', ...shift('same') });
    expect(res.json.anonymous).toEqual({ read: 'loses', write: 'same' });
  });

  it("a row's ACL: bob and carol gain the row, ann loses writing it", async () => {
    const res = await impact({
      className: 'City',
      change: { kind: 'acl', objectIds: [rome], ACL: { '*': { read: true } } },
    });
    expect(res.status, res.text).toBe(200);
    for (const op of ['find', 'get', 'count'])
      expect(operation(res.json, op), op).toEqual({ operation: op, ...shift('gains', [bob, carol]) });
    expect(operation(res.json, 'update')).toEqual({ operation: 'update', ...shift('same', [], [ann]) });
    expect(operation(res.json, 'delete')).toEqual({ operation: 'delete', ...shift('same') });
    expect(res.json.anonymous).toEqual({ read: 'gains', write: 'same' });
    expect(res.json.fields).toEqual([]);
  });
});

describe('the whole draft', () => {
  const cityHidden = () => ({
    field: 'city',
    visibleTo: 0,
    hiddenFrom: 3,
    visibleToSample: [],
    hiddenFromSample: who(ann, bob, carol),
    anonymous: 'loses',
  });

  it('a CLP that also changes protectedFields keeps the field part', async () => {
    const res = await impact({
      className: 'City',
      change: {
        kind: 'clp',
        classLevelPermissions: { ...BASE, create: { '*': true }, protectedFields: { '*': ['city'] } },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.fields.map(sortedField)).toEqual([cityHidden()]);
    expect(operation(res.json, 'create')).toEqual({ operation: 'create', ...shift('gains', [bob, carol]) });
  });

  it('changes applied in order: a CLP, then protectedFields', async () => {
    const res = await impact({
      className: 'City',
      changes: [
        { kind: 'clp', classLevelPermissions: { ...BASE, create: { '*': true } } },
        { kind: 'protectedFields', protectedFields: { '*': ['city'] } },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(operation(res.json, 'create')).toEqual({ operation: 'create', ...shift('gains', [bob, carol]) });
    expect(res.json.fields.map(sortedField)).toEqual([cityHidden()]);
  });

  it('role membership: adding bob to Editors previews his gains, and nothing is written', async () => {
    const res = await impact({ className: 'City', roles: [{ roleId: editors, users: { add: [bob.id] } }] });
    expect(res.status, res.text).toBe(200);
    // Only the users whose roles the draft changes can change: bob.
    expect(res.json.users).toEqual({ total: 3, considered: 1, sampled: false, bound: null });
    for (const op of ['find', 'get', 'count', 'create', 'update'])
      expect(operation(res.json, op), op).toEqual({ operation: op, ...shift('same', [bob]) });
    for (const op of ['delete', 'addField'])
      expect(operation(res.json, op), op).toEqual({ operation: op, ...shift('same') });
    // A preview: bob is still outside Editors.
    const refused = await t.request('POST', '/classes/City', {
      sessionToken: bob.token,
      body: { name: 'x' },
    });
    expect([refused.status, refused.json]).toEqual([
      400,
      { code: 119, error: 'Permission denied for action create on class City.' },
    ]);
  });

  it('role inheritance: Editors no longer holding Admins takes Editors from ann', async () => {
    const res = await impact({
      className: 'City',
      roles: [{ roleId: editors, roles: { remove: [admins] } }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.users).toEqual({ total: 3, considered: 1, sampled: false, bound: null });
    for (const op of ['find', 'get', 'count', 'create', 'update'])
      expect(operation(res.json, op), op).toEqual({ operation: op, ...shift('same', [], [ann]) });
    const still = await t.request('GET', `/classes/City/${rome}`, { sessionToken: ann.token });
    expect(still.status).toBe(200);
  });

  it('without a className, a role change is compared on every class', async () => {
    const res = await impact({ roles: [{ roleId: editors, users: { add: [bob.id] } }] });
    expect(res.status, res.text).toBe(200);
    expect(res.json.classes.map((c: { className: string }) => c.className)).toEqual(['City']);
    expect(sorted(res.json.classes[0].operations.find((o: Shift) => o.operation === 'create'))).toEqual({
      operation: 'create',
      ...shift('same', [bob]),
    });
    // The summary is over every class compared; fields are listed per class only.
    expect(operation(res.json, 'create')).toEqual({ operation: 'create', ...shift('same', [bob]) });
    expect(res.json.fields).toEqual([]);
  });

  it('a role cycle is refused as the write would refuse it', async () => {
    const res = await impact({ roles: [{ roleId: admins, roles: { add: [editors] } }] });
    expect([res.status, res.json]).toEqual([
      400,
      {
        code: 139,
        error: 'A role cannot hold itself, directly or through other roles (cycle in the role graph).',
      },
    ]);
  });

  it('bad drafts answer a clear 4xx', async () => {
    const clp = { kind: 'clp', classLevelPermissions: BASE };
    const cases: Array<[unknown, number, number, string]> = [
      [{ className: 'City' }, 400, 102, 'The draft is empty: give change, changes or roles.'],
      [{ className: 'City', change: clp, changes: [clp] }, 400, 102, 'Give change or changes, not both.'],
      [{ className: 'City', changes: [] }, 400, 102, 'changes must list 1 to 100 changes.'],
      [
        { className: 'City', changes: [clp, { kind: 'owner' }] },
        400,
        102,
        'changes[1].kind must be acl, clp or protectedFields.',
      ],
      [{ changes: [clp] }, 400, 102, 'className must be a non-empty string.'],
      [{ className: 'City', other: 1, change: clp }, 400, 102, 'Unknown key: other.'],
      [{ roles: 'Editors' }, 400, 102, 'roles must list 1 to 100 role changes.'],
      [{ roles: [{ roleId: editors }] }, 400, 102, 'roles[0] must add or remove users or roles.'],
      [{ roles: [{ roleId: 7 }] }, 400, 102, 'roles[0].roleId must be the objectId of a _Role.'],
      [
        { roles: [{ roleId: editors, users: { drop: [bob.id] } }] },
        400,
        102,
        'roles[0].users has an unknown key: drop.',
      ],
      [
        { roles: [{ roleId: editors, users: { add: bob.id } }] },
        400,
        102,
        'roles[0].users.add must list at most 1000 objectIds.',
      ],
      [{ roles: [{ roleId: editors, name: 'x' }] }, 400, 102, 'roles[0] has an unknown key: name.'],
      [{ roles: [{ roleId: 'nope', users: { add: [bob.id] } }] }, 404, 101, 'No _Role row has id nope.'],
      [{ roles: [{ roleId: editors, users: { add: ['nope'] } }] }, 404, 101, 'No _User row has id nope.'],
      [{ roles: [{ roleId: editors, roles: { add: ['nope'] } }] }, 404, 101, 'No _Role row has id nope.'],
    ];
    for (const [body, status, code, error] of cases) {
      const res = await impact(body);
      expect([res.status, res.json], JSON.stringify(body)).toEqual([status, { code, error }]);
    }
  });
});

function sortedField(f: {
  hiddenFromSample: Array<{ objectId: string }>;
  visibleToSample: Array<{ objectId: string }>;
}) {
  const by = (a: { objectId: string }, b: { objectId: string }) => a.objectId.localeCompare(b.objectId);
  return {
    ...f,
    hiddenFromSample: [...f.hiddenFromSample].sort(by),
    visibleToSample: [...f.visibleToSample].sort(by),
  };
}

describe('POST /security/rules', () => {
  const rules = (body: unknown) => t.request('POST', '/security/rules', { as: 'master', body });
  const masterOnly = { allowed: false, code: 119, message: 'unauthorized: master key is required' };

  it('_Installation: find and delete are master-only whatever the CLP says, and REST agrees', async () => {
    const res = await rules({ className: '_Installation' });
    expect(res.status, res.text).toBe(200);
    const op = (name: string) => res.json.operations.find((o: { operation: string }) => o.operation === name);
    for (const name of ['find', 'delete']) {
      expect(op(name)).toEqual({
        operation: name,
        fixed: true,
        builtIn: { rule: 'system.masterOnly', reason: `${name} on _Installation is master-only` },
        anonymous: {
          ...masterOnly,
          decidedBy: 'system',
          rule: 'system.masterOnly',
          reason: `${name} on _Installation is master-only`,
        },
        signedIn: {
          ...masterOnly,
          decidedBy: 'system',
          rule: 'system.masterOnly',
          reason: `${name} on _Installation is master-only`,
        },
      });
    }
    expect(op('create')).toMatchObject({
      fixed: true,
      builtIn: { rule: 'system.installation', reason: 'installations are created by their device' },
      anonymous: { allowed: true },
    });
    expect(op('update')).toMatchObject({
      fixed: true,
      builtIn: {
        rule: 'system.installation',
        reason: 'an installation is updated by the device whose X-Backend-Installation-Id it holds',
      },
      anonymous: { allowed: true, onSomeRows: true },
    });
    // get and count follow the CLP (public by default).
    expect(op('get')).toMatchObject({ fixed: false, anonymous: { allowed: true, rule: 'clp.public' } });
    expect(op('get').builtIn).toBeUndefined();
    // The service refuses what the rules say it refuses, although the stored CLP says public.
    const schema = await t.request('GET', '/schemas/_Installation', { as: 'master' });
    expect(schema.json.classLevelPermissions.find).toEqual({ '*': true });
    const found = await t.request('GET', '/installations', { as: 'rest' });
    expect([found.status, found.json]).toEqual([403, { code: 119, error: masterOnly.message }]);
  });

  it('_Session: the CLP still applies, beside the built-in rule of own sessions only', async () => {
    const res = await rules({ className: '_Session' });
    const find = res.json.operations.find((o: { operation: string }) => o.operation === 'find');
    expect(find).toMatchObject({
      fixed: false,
      builtIn: { rule: 'system.session', reason: 'sessions are only visible to their user' },
      anonymous: {
        allowed: false,
        code: 209,
        message: 'Session token required: send X-Backend-Session-Token.',
      },
      signedIn: { allowed: true, onSomeRows: true, rule: 'system.session' },
    });
    const create = res.json.operations.find((o: { operation: string }) => o.operation === 'create');
    expect(create).toMatchObject({ fixed: true, anonymous: masterOnly, signedIn: masterOnly });
  });

  it('a class of the app: every operation follows its CLP', async () => {
    const res = await rules({ className: 'City' });
    expect(res.status, res.text).toBe(200);
    expect(res.json.className).toBe('City');
    for (const o of res.json.operations) {
      expect(o.fixed, o.operation).toBe(false);
      expect(o.builtIn, o.operation).toBeUndefined();
    }
    const update = res.json.operations.find((o: { operation: string }) => o.operation === 'update');
    expect(update.anonymous).toEqual({
      allowed: false,
      decidedBy: 'clp',
      rule: 'clp.none',
      reason: 'no update grant on City matches the caller',
      code: 119,
      message: 'Permission denied for action update on class City.',
    });
  });

  it('bad input answers a clear 4xx; only the master key may ask', async () => {
    const cases: Array<[unknown, number, number, string]> = [
      [{}, 400, 102, 'className must be a non-empty string.'],
      [{ className: 'Nope' }, 400, 103, 'Class Nope does not exist.'],
      [{ className: 'City', other: 1 }, 400, 102, 'Unknown key: other.'],
      [[], 400, 107, 'The request body must be a JSON object.'],
    ];
    for (const [body, status, code, error] of cases) {
      const res = await rules(body);
      expect([res.status, res.json], JSON.stringify(body)).toEqual([status, { code, error }]);
    }
    const refused = await t.request('POST', '/security/rules', { as: 'rest', body: { className: 'City' } });
    expect([refused.status, refused.json]).toEqual([403, { code: 119, error: masterOnly.message }]);
  });
});
