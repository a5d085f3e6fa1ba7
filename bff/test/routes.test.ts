import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, findLeaks, KEYS, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * Every API route over HTTP against a real service: one row per scenario (PocketBase style):
 * method, path, body, expected status, fragments that must and must not appear. Rows run in
 * order and may use ids saved by earlier rows.
 */

let t: StartedBff;
let admin: BffFetch;
const A = '/bff/apps/test-app';
const ids: Record<string, string> = {};

interface Case {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string | (() => string);
  body?: unknown | (() => unknown);
  status: number;
  has?: Array<string | RegExp>;
  hasNot?: string[];
  check?: (json: any) => void;
  /** Runs before the request (e.g. a login straight at the service). */
  before?: () => Promise<void>;
}

const value = <T>(v: T | (() => T)): T => (typeof v === 'function' ? (v as () => T)() : v);

const CASES: Case[] = [
  // apps
  { name: 'app list', method: 'GET', path: '/bff/apps', status: 200, has: ['"id":"test-app"', 'Test app'] },
  {
    name: 'unknown app',
    method: 'GET',
    path: '/bff/apps/nope/schemas',
    status: 404,
    has: ['"code":101', 'Unknown app'],
  },
  // classes and schemas
  {
    name: 'create class',
    method: 'POST',
    path: `${A}/schemas`,
    body: {
      className: 'Game',
      fields: {
        title: { type: 'String' },
        score: { type: 'Number' },
        owner: { type: 'Pointer', targetClass: '_User' },
      },
    },
    status: 201,
    has: ['"className":"Game"', '"score":{"type":"Number"}'],
  },
  {
    name: 'create class: zod rejects a bad field type',
    method: 'POST',
    path: `${A}/schemas`,
    body: { className: 'Bad', fields: { x: { type: 'Strnig' } } },
    status: 400,
    has: ['"code":107', 'fields.x.type'],
  },
  {
    name: 'create class: service error passed through (already exists)',
    method: 'POST',
    path: `${A}/schemas`,
    body: { className: 'Game' },
    status: 400,
    has: ['"code":103', 'Class Game already exists.'],
  },
  {
    name: 'get schema',
    method: 'GET',
    path: `${A}/schemas/Game`,
    status: 200,
    has: ['"title":{"type":"String"}'],
  },
  {
    name: 'get schema: unknown class',
    method: 'GET',
    path: `${A}/schemas/Nope`,
    status: 400,
    has: ['"code":103'],
  },
  {
    name: 'add field',
    method: 'POST',
    path: `${A}/schemas/Game/fields`,
    body: { name: 'level', type: 'Number' },
    status: 201,
    has: ['"level":{"type":"Number"}'],
  },
  {
    name: 'add field: Pointer without targetClass',
    method: 'POST',
    path: `${A}/schemas/Game/fields`,
    body: { name: 'p', type: 'Pointer' },
    status: 400,
    has: ['"code":107', 'targetClass'],
  },
  {
    name: 'add field: a Vector with its dimension',
    method: 'POST',
    path: `${A}/schemas/Game/fields`,
    body: { name: 'embedding', type: 'Vector', dimension: 4 },
    status: 201,
    has: ['"embedding":{"type":"Vector","dimension":4}'],
  },
  {
    name: 'add field: a Vector without a dimension',
    method: 'POST',
    path: `${A}/schemas/Game/fields`,
    body: { name: 'v2', type: 'Vector' },
    status: 400,
    has: ['"code":107', 'dimension is required for Vector fields'],
  },
  {
    name: 'add field: type conflict passed through',
    method: 'POST',
    path: `${A}/schemas/Game/fields`,
    body: { name: 'title', type: 'Number' },
    status: 400,
    has: ['"code":255', 'Field title exists'],
  },
  {
    name: 'add field: required and defaultValue reach the service and come back',
    method: 'POST',
    path: `${A}/schemas/Game/fields`,
    body: { name: 'stars', type: 'Number', required: true, defaultValue: 1 },
    status: 201,
    has: ['"stars":{"type":"Number","required":true,"defaultValue":1}'],
  },
  {
    name: "add field: a default of another type is the service's 111",
    method: 'POST',
    path: `${A}/schemas/Game/fields`,
    body: { name: 'rank', type: 'Number', defaultValue: 'first' },
    status: 400,
    has: ['"code":111', 'schema mismatch for Game.rank default value; expected Number but got String'],
  },
  {
    name: 'add index',
    method: 'POST',
    path: `${A}/schemas/Game/indexes`,
    body: { name: 'by_score', keys: { score: -1 } },
    status: 201,
    has: ['"by_score":{"score":-1}'],
  },
  {
    name: 'add index: unknown field passed through',
    method: 'POST',
    path: `${A}/schemas/Game/indexes`,
    body: { name: 'by_x', keys: { nothere: 1 } },
    status: 400,
    has: ['"code":255', 'Field nothere does not exist'],
  },
  {
    name: 'delete index',
    method: 'DELETE',
    path: `${A}/schemas/Game/indexes/by_score`,
    status: 200,
    hasNot: ['by_score'],
  },
  {
    name: 'delete index: missing',
    method: 'DELETE',
    path: `${A}/schemas/Game/indexes/by_score`,
    status: 400,
    has: ['"code":255', 'does not exist'],
  },
  {
    name: 'change CLP',
    method: 'PUT',
    path: `${A}/schemas/Game/clp`,
    body: {
      classLevelPermissions: { find: { '*': true }, get: { '*': true }, create: {}, update: {}, delete: {} },
    },
    status: 200,
    has: ['"create":{}'],
  },
  {
    name: 'change CLP: zod',
    method: 'PUT',
    path: `${A}/schemas/Game/clp`,
    body: { clp: {} },
    status: 400,
    has: ['"code":107', 'classLevelPermissions'],
  },
  {
    name: 'delete field',
    method: 'DELETE',
    path: `${A}/schemas/Game/fields/level`,
    status: 200,
    hasNot: ['"level"'],
  },
  {
    name: 'delete field: built-in refused by the service',
    method: 'DELETE',
    path: `${A}/schemas/Game/fields/createdAt`,
    status: 400,
    has: ['"code":105'],
  },
  // rows
  {
    name: 'create row',
    method: 'POST',
    path: `${A}/classes/Game`,
    body: { title: 'first', score: 10 },
    status: 201,
    has: ['objectId', 'createdAt'],
    check: (j) => {
      ids.row1 = j.objectId;
    },
  },
  {
    name: 'create row 2',
    method: 'POST',
    path: `${A}/classes/Game`,
    body: { title: 'second', score: 20 },
    status: 201,
    check: (j) => {
      ids.row2 = j.objectId;
    },
  },
  {
    name: 'create row 3',
    method: 'POST',
    path: `${A}/classes/Game`,
    body: { title: 'third', score: 30 },
    status: 201,
    check: (j) => {
      ids.row3 = j.objectId;
    },
  },
  {
    name: 'create row: type error passed through',
    method: 'POST',
    path: `${A}/classes/Game`,
    body: { score: 'not a number' },
    status: 400,
    has: ['"code":111'],
  },
  {
    name: 'create row: zod (body is not an object)',
    method: 'POST',
    path: `${A}/classes/Game`,
    body: [1, 2],
    status: 400,
    has: ['"code":107', 'Invalid row'],
  },
  {
    name: 'find with where/order/limit/skip/keys/count',
    method: 'GET',
    path: `${A}/classes/Game?where=${encodeURIComponent('{"score":{"$gte":15}}')}&order=-score&limit=1&skip=0&keys=title&count=1`,
    status: 200,
    check: (j) => {
      expect(j.count).toBe(2);
      expect(j.results).toHaveLength(1);
      expect(j.results[0].title).toBe('third');
      expect(j.results[0].score).toBeUndefined();
    },
  },
  {
    name: 'find: zod rejects a where that is not JSON',
    method: 'GET',
    path: `${A}/classes/Game?where=%7Bnope`,
    status: 400,
    has: ['"code":107', 'where: must be a JSON object'],
  },
  {
    name: 'find: zod rejects an unknown parameter',
    method: 'GET',
    path: `${A}/classes/Game?foo=1`,
    status: 400,
    has: ['"code":107', 'foo'],
  },
  {
    name: 'find: query error passed through',
    method: 'GET',
    path: `${A}/classes/Game?where=${encodeURIComponent('{"score":{"$bogus":1}}')}`,
    status: 400,
    has: ['"code":102'],
  },
  {
    name: 'count',
    method: 'GET',
    path: `${A}/classes/Game/count?where=${encodeURIComponent('{"score":{"$lt":25}}')}`,
    status: 200,
    check: (j) => expect(j).toEqual({ count: 2 }),
  },
  {
    name: 'get row',
    method: 'GET',
    path: () => `${A}/classes/Game/${ids.row1}`,
    status: 200,
    has: ['"title":"first"'],
  },
  {
    name: 'get row: 101 passed through as 404',
    method: 'GET',
    path: `${A}/classes/Game/doesNotExist`,
    status: 404,
    has: ['"code":101', 'Object not found.'],
  },
  {
    name: 'update row',
    method: 'PUT',
    path: () => `${A}/classes/Game/${ids.row1}`,
    body: { score: { __op: 'Increment', amount: 5 } },
    status: 200,
    has: ['updatedAt', '"score":15'],
  },
  {
    name: 'update row: missing row',
    method: 'PUT',
    path: `${A}/classes/Game/doesNotExist`,
    body: { score: 1 },
    status: 404,
    has: ['"code":101'],
  },
  {
    name: 'change ACL',
    method: 'PUT',
    path: () => `${A}/classes/Game/${ids.row1}/acl`,
    body: { ACL: { '*': { read: true }, 'role:Mods': { read: true, write: true } } },
    status: 200,
    check: (j) => expect(j.ACL).toEqual({ '*': { read: true }, 'role:Mods': { read: true, write: true } }),
  },
  {
    name: 'change ACL: zod',
    method: 'PUT',
    path: () => `${A}/classes/Game/${ids.row1}/acl`,
    body: { ACL: { '*': { read: 'yes' } } },
    status: 400,
    has: ['"code":107', 'ACL.*.read'],
  },
  {
    name: 'bulk update a field',
    method: 'POST',
    path: `${A}/classes/Game/bulk/update`,
    body: () => ({ objectIds: [ids.row2, ids.row3], field: 'title', value: 'bulk' }),
    status: 200,
    check: (j) => expect(j).toMatchObject({ succeeded: 2, failed: 0 }),
  },
  {
    name: 'bulk update: per-row errors reported',
    method: 'POST',
    path: `${A}/classes/Game/bulk/update`,
    body: () => ({ objectIds: [ids.row2, 'missingRow1'], field: 'score', value: 1 }),
    status: 200,
    check: (j) => {
      expect(j).toMatchObject({ succeeded: 1, failed: 1 });
      expect(j.results[1].error.code).toBe(101);
    },
  },
  {
    name: 'bulk update: zod (no ids)',
    method: 'POST',
    path: `${A}/classes/Game/bulk/update`,
    body: { objectIds: [], field: 'title', value: 'x' },
    status: 400,
    has: ['"code":107', 'objectIds'],
  },
  {
    name: 'bulk delete',
    method: 'POST',
    path: `${A}/classes/Game/bulk/delete`,
    body: () => ({ objectIds: [ids.row2, ids.row3] }),
    status: 200,
    check: (j) => expect(j).toMatchObject({ succeeded: 2, failed: 0 }),
  },
  {
    name: 'bulk delete: zod',
    method: 'POST',
    path: `${A}/classes/Game/bulk/delete`,
    body: { objectIds: 'all' },
    status: 400,
    has: ['"code":107'],
  },
  { name: 'delete row', method: 'DELETE', path: () => `${A}/classes/Game/${ids.row1}`, status: 200 },
  {
    name: 'delete row: missing',
    method: 'DELETE',
    path: () => `${A}/classes/Game/${ids.row1}`,
    status: 404,
    has: ['"code":101'],
  },
  // users and sessions
  {
    name: 'create user',
    method: 'POST',
    path: `${A}/users`,
    body: { username: 'alice', password: 'alice-pw', email: 'alice@example.com' },
    status: 201,
    hasNot: ['sessionToken', 'alice-pw'],
    check: (j) => {
      ids.alice = j.objectId;
    },
  },
  {
    name: 'create user: taken name passed through',
    method: 'POST',
    path: `${A}/users`,
    body: { username: 'alice', password: 'x' },
    status: 400,
    has: ['"code":202'],
  },
  {
    name: 'create user: zod',
    method: 'POST',
    path: `${A}/users`,
    body: { username: 'bob' },
    status: 400,
    has: ['password'],
  },
  {
    name: 'list users',
    method: 'GET',
    path: `${A}/users?limit=10`,
    status: 200,
    has: ['"username":"alice"', 'alice@example.com'],
    hasNot: ['alice-pw'],
  },
  {
    name: 'get user',
    method: 'GET',
    path: () => `${A}/users/${ids.alice}`,
    status: 200,
    has: ['"username":"alice"'],
  },
  {
    name: 'get user: missing',
    method: 'GET',
    path: `${A}/users/nobody123`,
    status: 404,
    has: ['"code":101'],
  },
  {
    name: 'update user',
    method: 'PUT',
    path: () => `${A}/users/${ids.alice}`,
    body: { email: 'alice2@example.com' },
    status: 200,
    has: ['updatedAt'],
  },
  {
    name: 'update user: bad email passed through',
    method: 'PUT',
    path: () => `${A}/users/${ids.alice}`,
    body: { email: 'not-an-email' },
    status: 400,
    has: ['"code":125'],
  },
  {
    name: 'list sessions of a user',
    before: async () => {
      const login = await t.service.request('POST', '/login', {
        body: { username: 'alice', password: 'alice-pw' },
      });
      expect(login.status).toBe(200);
    },
    method: 'GET',
    path: () => `${A}/sessions?user=${ids.alice}`,
    status: 200,
    check: (j) => {
      expect(j.results.length).toBeGreaterThan(0);
      for (const s of j.results) expect(s.sessionToken).toBe('[FILTERED]');
      ids.session = j.results[0].objectId;
    },
  },
  {
    name: 'list sessions: zod',
    method: 'GET',
    path: `${A}/sessions?user=%20bad`,
    status: 400,
    has: ['"code":107'],
  },
  { name: 'revoke session', method: 'DELETE', path: () => `${A}/sessions/${ids.session}`, status: 200 },
  {
    name: 'revoke session: missing',
    method: 'DELETE',
    path: () => `${A}/sessions/${ids.session}`,
    status: 404,
    has: ['"code":101'],
  },
  // roles
  {
    name: 'create role',
    method: 'POST',
    path: `${A}/roles`,
    body: { name: 'Mods' },
    status: 201,
    check: (j) => {
      ids.mods = j.objectId;
    },
  },
  {
    name: 'create role 2',
    method: 'POST',
    path: `${A}/roles`,
    body: { name: 'Admins' },
    status: 201,
    check: (j) => {
      ids.admins = j.objectId;
    },
  },
  {
    name: 'create role: duplicate',
    method: 'POST',
    path: `${A}/roles`,
    body: { name: 'Mods' },
    status: 400,
    has: ['"code":137'],
  },
  {
    name: 'create role: zod',
    method: 'POST',
    path: `${A}/roles`,
    body: { name: 'bad/name' },
    status: 400,
    has: ['"code":107', 'name'],
  },
  {
    name: 'list roles',
    method: 'GET',
    path: `${A}/roles`,
    status: 200,
    has: ['"name":"Mods"', '"name":"Admins"'],
  },
  {
    name: 'add users to a role',
    method: 'POST',
    path: () => `${A}/roles/${ids.mods}/users`,
    body: () => ({ userIds: [ids.alice] }),
    status: 200,
    check: (j) => expect(j.users.map((u: any) => u.username)).toEqual(['alice']),
  },
  {
    name: 'add users: zod',
    method: 'POST',
    path: () => `${A}/roles/${ids.mods}/users`,
    body: { users: [] },
    status: 400,
    has: ['"code":107'],
  },
  {
    name: 'add child role (hierarchy)',
    method: 'POST',
    path: () => `${A}/roles/${ids.mods}/roles`,
    body: () => ({ roleIds: [ids.admins] }),
    status: 200,
    check: (j) => expect(j.roles.map((r: any) => r.name)).toEqual(['Admins']),
  },
  {
    name: 'add child role: a cycle is refused by the service',
    method: 'POST',
    path: () => `${A}/roles/${ids.admins}/roles`,
    body: () => ({ roleIds: [ids.mods] }),
    status: 400,
    has: ['"code":139'],
  },
  {
    name: 'get role with members',
    method: 'GET',
    path: () => `${A}/roles/${ids.mods}`,
    status: 200,
    check: (j) => {
      expect(j.role.name).toBe('Mods');
      expect(j.users).toHaveLength(1);
      expect(j.roles).toHaveLength(1);
    },
  },
  {
    name: 'get role: the roles it belongs to (parents)',
    method: 'GET',
    path: () => `${A}/roles/${ids.admins}`,
    status: 200,
    check: (j) => expect(j.parents.map((r: any) => r.name)).toEqual(['Mods']),
  },
  {
    name: 'get role: missing',
    method: 'GET',
    path: `${A}/roles/noRole1234`,
    status: 404,
    has: ['"code":101'],
  },
  {
    name: 'remove child role',
    method: 'DELETE',
    path: () => `${A}/roles/${ids.mods}/roles/${ids.admins}`,
    status: 200,
    check: (j) => expect(j.roles).toEqual([]),
  },
  {
    name: 'remove user from role',
    method: 'DELETE',
    path: () => `${A}/roles/${ids.mods}/users/${ids.alice}`,
    status: 200,
    check: (j) => expect(j.users).toEqual([]),
  },
  { name: 'delete role', method: 'DELETE', path: () => `${A}/roles/${ids.admins}`, status: 200 },
  {
    name: 'delete role: missing',
    method: 'DELETE',
    path: () => `${A}/roles/${ids.admins}`,
    status: 404,
    has: ['"code":101'],
  },
  { name: 'delete user', method: 'DELETE', path: () => `${A}/users/${ids.alice}`, status: 200 },
  {
    name: 'delete user: missing',
    method: 'DELETE',
    path: () => `${A}/users/${ids.alice}`,
    status: 404,
    has: ['"code":101'],
  },
  // config
  {
    name: 'update config',
    method: 'PUT',
    path: `${A}/config`,
    body: { params: { welcome: 'hi', secretParam: 42 }, masterKeyOnly: { secretParam: true } },
    status: 200,
    check: (j) =>
      expect(j).toEqual({ params: { welcome: 'hi', secretParam: 42 }, masterKeyOnly: { secretParam: true } }),
  },
  {
    name: 'update config: zod',
    method: 'PUT',
    path: `${A}/config`,
    body: { params: { x: 1 }, masterKeyOnly: { x: 'yes' } },
    status: 400,
    has: ['"code":107', 'masterKeyOnly.x'],
  },
  {
    name: 'get config',
    method: 'GET',
    path: `${A}/config`,
    status: 200,
    has: ['"welcome":"hi"', '"secretParam":true'],
  },
  // raw API console
  {
    name: 'API console GET',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'GET', path: '/classes/Game', query: { limit: 1, count: 1 } },
    status: 200,
    check: (j) => expect(j).toMatchObject({ status: 200, body: { results: [], count: 0 } }),
  },
  {
    name: 'API console POST',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'POST', path: '/classes/Game', body: { title: 'raw' } },
    status: 200,
    check: (j) => {
      expect(j.status).toBe(201);
      ids.raw = j.body.objectId;
    },
  },
  {
    name: 'API console: a protocol error is shown, not thrown',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'GET', path: '/classes/Game/nothing123' },
    status: 200,
    check: (j) => expect(j).toEqual({ status: 404, body: { code: 101, error: 'Object not found.' } }),
  },
  {
    name: 'API console: absolute URL refused',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'GET', path: 'http://example.com/x' },
    status: 400,
    has: ['"code":107'],
  },
  {
    name: 'API console: protocol-relative URL refused',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'GET', path: '//example.com/x' },
    status: 400,
    has: ['"code":107'],
  },
  {
    name: 'API console: .. refused',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'GET', path: '/classes/../../health' },
    status: 400,
    has: ['"code":107', '..'],
  },
  {
    name: 'API console: encoded .. refused',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'GET', path: '/classes/%2e%2e/%2E%2E/x' },
    status: 400,
    has: ['"code":107'],
  },
  {
    name: 'API console: zod (bad method)',
    method: 'POST',
    path: `${A}/console`,
    body: { method: 'TRACE', path: '/classes/Game' },
    status: 400,
    has: ['"code":107', 'method'],
  },
  // delete class (after emptying it)
  {
    name: 'delete class: not empty passed through',
    method: 'DELETE',
    path: `${A}/schemas/Game`,
    status: 400,
    has: ['"code":255'],
  },
  { name: 'delete raw row', method: 'DELETE', path: () => `${A}/classes/Game/${ids.raw}`, status: 200 },
  { name: 'delete class', method: 'DELETE', path: `${A}/schemas/Game`, status: 200 },
  {
    name: 'list schemas with counts',
    method: 'GET',
    path: `${A}/schemas`,
    status: 200,
    hasNot: ['"className":"Game"'],
    check: (j) => {
      const user = j.results.find((c: any) => c.className === '_User');
      expect(user.count).toBe(0);
    },
  },
  // audit
  {
    name: 'audit list',
    method: 'GET',
    path: '/bff/audit?app=test-app&limit=5',
    status: 200,
    check: (j) => {
      expect(j.results).toHaveLength(5);
      expect(j.next).toBe(j.results[4].id);
    },
  },
  {
    name: 'audit list: zod',
    method: 'GET',
    path: '/bff/audit?since=yesterday',
    status: 400,
    has: ['"code":107', 'since'],
  },
];

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
});
afterAll(async () => {
  await t?.close();
});

describe('bff API routes', () => {
  for (const c of CASES) {
    it(`${c.method} ${typeof c.path === 'string' ? c.path : '…'} — ${c.name}`, async () => {
      await c.before?.();
      const res = await admin(value(c.path), {
        method: c.method,
        body: c.body === undefined ? undefined : value(c.body),
      });
      if (res.status !== c.status) throw new Error(`expected ${c.status}, got ${res.status}: ${res.text}`);
      for (const h of c.has ?? []) {
        if (typeof h === 'string') expect(res.text).toContain(h);
        else expect(res.text).toMatch(h);
      }
      for (const h of c.hasNot ?? []) expect(res.text).not.toContain(h);
      if (res.status >= 400) {
        expect(typeof res.json.code).toBe('number');
        expect(typeof res.json.error).toBe('string');
      }
      c.check?.(res.json);
    });
  }

  it('a data service that is down answers 502 {code: 100} without its address or keys', async () => {
    const down = await startBff({
      options: {
        apps: [
          {
            id: 'down',
            name: 'Down',
            serverURL: 'http://127.0.0.1:9/api',
            appId: KEYS.appId,
            masterKey: KEYS.masterKey,
          },
        ],
      },
    });
    try {
      const a = await down.login('admin');
      const res = await a.get('/bff/apps/down/classes/Game');
      expect(res.status).toBe(502);
      expect(res.json).toEqual({ code: 100, error: 'The data service is unreachable.' });
      expect(findLeaks(down.responses, down.secrets)).toEqual([]);
    } finally {
      await down.close();
    }
  });

  it('a console user limited to other apps cannot open this one, nor its audit entries', async () => {
    const two = await startBff({
      apps: [{ id: 'test-app' }, { id: 'other' }],
      users: [{ username: 'scoped', role: 'admin', apps: ['other'] }],
    });
    try {
      const s = await two.login('scoped');
      const list = await s.get('/bff/apps');
      expect(list.json.results.map((a: any) => a.id)).toEqual(['other']);
      expect((await s.get('/bff/apps/test-app/schemas')).status).toBe(403);
      expect((await s.get('/bff/audit?app=test-app')).status).toBe(403);
      expect((await s.get('/bff/audit')).status).toBe(200);
    } finally {
      await two.close();
    }
  });

  it('no key in any response of this suite', () => {
    expect(t.responses.length).toBeGreaterThan(CASES.length - 1);
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
