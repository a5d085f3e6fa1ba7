import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClass,
  createRole,
  createRow,
  createUser,
  pointer,
  type TestUser,
} from './helpers/access-world.ts';
import { type Credential, startService, type TestService } from './helpers/service.ts';

/**
 * The permission matrix: for each layer (a class set up to exercise it) and each operation, the
 * verdict per caller, in this column order:
 *   M master · O owner · X other user · R role member (through a chain of 3 roles) ·
 *   A anonymous with app keys · N no keys
 * Cells:
 *   y allowed (the row is seen / written)       e allowed, but the row is not among the results
 *   n 400 119 Permission denied for action <op> on class <C>.
 *   u 400 119 ... for action update (addField is checked after update)
 *   a 404 101 Permission denied, user needs to be authenticated.
 *   f 404 101 Object not found.                 k 403 119 unauthorized (no application keys)
 *   m 403 119 unauthorized: master key is required   - not checked here
 */
const OPS = ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'] as const;
type Op = (typeof OPS)[number];
const CALLERS = ['master', 'owner', 'other', 'member', 'anonymous', 'nokeys'] as const;

const MATRIX: Record<string, Record<Op, string>> = {
  // Default CLP, public rows.
  MxOpen: {
    find: 'yyyyyk',
    get: 'yyyyyk',
    count: 'yyyyyk',
    create: 'yyyyyk',
    update: 'yyyyyk',
    delete: 'yyyyyk',
    addField: 'yyyyyk',
  },
  // CLP: every operation for role:MxTop only (the member holds it through MxMid and MxLow).
  MxRole: {
    find: 'ynnynk',
    get: 'ynnynk',
    count: 'ynnynk',
    create: 'ynnynk',
    update: 'ynnynk',
    delete: 'ynnynk',
    addField: 'yuuyuk',
  },
  // CLP: every operation for the owner's user id only.
  MxUser: {
    find: 'yynnnk',
    get: 'yynnnk',
    count: 'yynnnk',
    create: 'yynnnk',
    update: 'yynnnk',
    delete: 'yynnnk',
    addField: 'yyuuuk',
  },
  // CLP: requiresAuthentication on every operation.
  MxAuth: {
    find: 'yyyyak',
    get: 'yyyyak',
    count: 'yyyyak',
    create: 'yyyyak',
    update: 'yyyyak',
    delete: 'yyyyak',
    addField: 'yyyyak',
  },
  // CLP: no grants; readUserFields/writeUserFields ['owner'] (pointer permissions, checked in SQL).
  MxPointer: {
    find: 'yyeenk',
    get: 'yyffnk',
    count: 'yyeenk',
    create: 'ynnnnk',
    update: 'yyffnk',
    delete: 'yyffnk',
    addField: 'ynnnuk',
  },
  // CLP: find via pointerFields ['owner'] only; get public.
  MxPtrField: {
    find: 'yyeenk',
    get: 'yyyyyk',
    count: 'ynnnnk',
    create: 'yyyyyk',
    update: 'yyyyyk',
    delete: 'yyyyyk',
    addField: 'yyyyyk',
  },
  // Default CLP; ACL: owner read+write, role:MxTop read.
  MxAcl: {
    find: 'yyeyek',
    get: 'yyfyfk',
    count: 'yyeyek',
    create: 'yyyyyk',
    update: 'yyfffk',
    delete: 'yyfffk',
    addField: 'yyfffk',
  },
  // Built-in _Role (create/update/delete/addField master-only; reads public).
  _Role: {
    find: 'yyyyyk',
    get: 'yyyyyk',
    count: 'yyyyyk',
    create: 'ynnnnk',
    update: 'ynnnnk',
    delete: 'ynnnnk',
    addField: 'yuuuuk',
  },
  // Master-only system class.
  _JobStatus: {
    find: '-mmmmk',
    get: '-mmmmk',
    count: '-mmmmk',
    create: '-mmmmk',
    update: '-mmmmk',
    delete: '-mmmmk',
    addField: '-mmmmk',
  },
};

const ALL = (perm: Record<string, unknown>) =>
  Object.fromEntries(OPS.map((op) => [op, perm])) as Record<string, unknown>;

let t: TestService;
const users: Record<string, TestUser> = {};
let roleN = 0;

beforeAll(async () => {
  t = await startService();
  users.owner = await createUser(t);
  users.other = await createUser(t);
  users.member = await createUser(t);
  const low = await createRole(t, 'MxLow', { users: [users.member.id] });
  const mid = await createRole(t, 'MxMid', { roles: [low] });
  await createRole(t, 'MxTop', { roles: [mid] });
  const fields = { owner: { type: 'Pointer', targetClass: '_User' }, n: { type: 'Number' } };
  await createClass(t, 'MxOpen', fields);
  await createClass(t, 'MxRole', fields, ALL({ 'role:MxTop': true }));
  await createClass(t, 'MxUser', fields, ALL({ [users.owner.id]: true }));
  await createClass(t, 'MxAuth', fields, ALL({ requiresAuthentication: true }));
  await createClass(t, 'MxPointer', fields, {
    ...ALL({}),
    readUserFields: ['owner'],
    writeUserFields: ['owner'],
  });
  await createClass(t, 'MxPtrField', fields, {
    ...ALL({ '*': true }),
    find: { pointerFields: ['owner'] },
    count: {},
  });
  await createClass(t, 'MxAcl', fields);
});
afterAll(async () => {
  await t?.close();
});

async function freshRow(className: string): Promise<string> {
  if (className === '_Role') return createRole(t, `MxR${roleN++}`);
  if (className === '_JobStatus') return 'nonexistent';
  const acl =
    className === 'MxAcl'
      ? { [users.owner.id]: { read: true, write: true }, 'role:MxTop': { read: true } }
      : undefined;
  return createRow(t, className, {
    n: 1,
    owner: pointer('_User', users.owner.id),
    ...(acl ? { ACL: acl } : {}),
  });
}

function credentials(caller: (typeof CALLERS)[number]): { as: Credential; sessionToken?: string } {
  if (caller === 'master') return { as: 'master' };
  if (caller === 'anonymous') return { as: 'rest' };
  if (caller === 'nokeys') return { as: 'none' };
  return { as: 'rest', sessionToken: users[caller]!.token };
}

async function perform(className: string, op: Op, caller: (typeof CALLERS)[number], id: string) {
  const base = `/classes/${className}`;
  const creds = credentials(caller);
  const byId = { where: { objectId: id } };
  switch (op) {
    case 'find':
      return t.request('GET', base, { ...creds, query: byId });
    case 'get':
      return t.request('GET', `${base}/${id}`, creds);
    case 'count':
      return t.request('GET', base, { ...creds, query: { ...byId, count: 1, limit: 0 } });
    case 'create':
      return t.request('POST', base, {
        ...creds,
        body: className === '_Role' ? { name: `MxC${roleN++}` } : { n: 2 },
      });
    case 'update':
      return t.request('PUT', `${base}/${id}`, { ...creds, body: className === '_Role' ? {} : { n: 3 } });
    case 'delete':
      return t.request('DELETE', `${base}/${id}`, creds);
    case 'addField':
      return t.request('PUT', `${base}/${id}`, { ...creds, body: { [`f${roleN++}`]: 1 } });
  }
}

describe('permission matrix', () => {
  for (const [className, row] of Object.entries(MATRIX)) {
    for (const op of OPS) {
      CALLERS.forEach((caller, i) => {
        const cell = row[op][i]!;
        if (cell === '-') return;
        it(`${className} ${op} as ${caller}: ${cell}`, async () => {
          const id = await freshRow(className);
          const res = await perform(className, op, caller, id);
          const denied = (status: number, code: number, error: string) =>
            expect({ status: res.status, body: res.json }).toEqual({ status, body: { code, error } });
          switch (cell) {
            case 'y':
              expect(res.status, res.text).toBe(op === 'create' ? 201 : 200);
              if (op === 'find')
                expect(res.json.results.map((r: { objectId: string }) => r.objectId)).toEqual([id]);
              if (op === 'count') expect(res.json).toEqual({ results: [], count: 1 });
              if (op === 'get') expect(res.json.objectId).toBe(id);
              if (op === 'delete' || op === 'update' || op === 'addField') {
                const after = await t.request('GET', `/classes/${className}/${id}`, { as: 'master' });
                expect(after.status).toBe(op === 'delete' ? 404 : 200);
              }
              break;
            case 'e':
              expect(res.status, res.text).toBe(200);
              if (op === 'find') expect(res.json.results).toEqual([]);
              if (op === 'count') expect(res.json).toEqual({ results: [], count: 0 });
              break;
            case 'n':
              denied(400, 119, `Permission denied for action ${op} on class ${className}.`);
              break;
            case 'u':
              denied(400, 119, `Permission denied for action update on class ${className}.`);
              break;
            case 'a':
              denied(404, 101, 'Permission denied, user needs to be authenticated.');
              break;
            case 'f':
              denied(404, 101, 'Object not found.');
              break;
            case 'k':
              denied(403, 119, 'unauthorized');
              break;
            case 'm':
              denied(403, 119, 'unauthorized: master key is required');
              break;
            default:
              throw new Error(`bad cell ${cell}`);
          }
          // A refused write leaves the row as it was.
          if (
            cell !== 'y' &&
            cell !== 'e' &&
            ['update', 'delete', 'addField'].includes(op) &&
            className.startsWith('Mx')
          ) {
            const after = await t.request('GET', `/classes/${className}/${id}`, { as: 'master' });
            expect(after.status).toBe(200);
            expect(after.json.n).toBe(1);
          }
        });
      });
    }
  }
});
