import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileAdapter, isStoredName } from '../src/files/service.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';
import type { TransferFiles } from '../src/transfer/format.ts';
import { importApp } from '../src/transfer/import.ts';
import { exportToFile } from '../src/transfer/open.ts';
import { createUser, type TestUser } from './helpers/access-world.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * A saved class-level permissions document fails closed, as the incumbent reads a stored CLP: every
 * operation it does not name is stored `{}` (master key only), and a missing protectedFields `{}`
 * (a built-in class keeps its default groups), whatever path saves it (POST and PUT /schemas, an
 * import, an impact draft). A class created without a CLP keeps the public default; the built-in
 * classes keep theirs; a document stored partially by an earlier version is read as it was.
 */

let t: TestService;
let ann: TestUser;

const CLOSED = {
  find: {},
  get: {},
  count: {},
  create: {},
  update: {},
  delete: {},
  addField: {},
  protectedFields: {},
};
const OPEN = {
  find: { '*': true },
  get: { '*': true },
  count: { '*': true },
  create: { '*': true },
  update: { '*': true },
  delete: { '*': true },
  addField: { '*': true },
  protectedFields: { '*': [] },
};
const denied = (op: string, className: string) => ({
  code: 119,
  error: `Permission denied for action ${op} on class ${className}.`,
});

beforeAll(async () => {
  t = await startService();
  ann = await createUser(t, 'ann');
});
afterAll(async () => {
  await t?.close();
});

const schemaOf = async (className: string) =>
  (await t.request('GET', `/schemas/${className}`, { as: 'master' })).json.classLevelPermissions;

/** What an anonymous caller (application keys only) gets for each operation on a row made by master. */
async function anonymousAnswers(className: string): Promise<Record<string, [number, unknown]>> {
  const row = await t.request('POST', `/classes/${className}`, {
    as: 'master',
    body: { title: 'a', ACL: { '*': { read: true, write: true } } },
  });
  expect(row.status, row.text).toBe(201);
  const id = row.json.objectId as string;
  const answer = (res: { status: number; json: any }): [number, unknown] => [res.status, res.json];
  return {
    find: answer(await t.request('GET', `/classes/${className}`, { query: { keys: 'title' } })),
    get: answer(await t.request('GET', `/classes/${className}/${id}`, { query: { keys: 'title' } })),
    count: answer(await t.request('GET', `/classes/${className}`, { query: { count: 1, limit: 0 } })),
    create: answer(await t.request('POST', `/classes/${className}`, { body: { title: 'b' } })),
    update: answer(await t.request('PUT', `/classes/${className}/${id}`, { body: { title: 'c' } })),
    addField: answer(await t.request('PUT', `/classes/${className}/${id}`, { body: { added: 1 } })),
    delete: answer(await t.request('DELETE', `/classes/${className}/${id}`)),
  };
}

describe('saving a CLP that leaves operations out', () => {
  it('POST /schemas stores every operation it does not name as {} and answers the whole document', async () => {
    const res = await t.request('POST', '/schemas/OnlyReads', {
      as: 'master',
      body: {
        fields: { title: { type: 'String' } },
        classLevelPermissions: { find: { '*': true }, get: { '*': true } },
      },
    });
    expect(res.status, res.text).toBe(200);
    const whole = { ...CLOSED, find: { '*': true }, get: { '*': true } };
    expect(res.json.classLevelPermissions).toEqual(whole);
    expect(await schemaOf('OnlyReads')).toEqual(whole);
    const listed = await t.request('GET', '/schemas', { as: 'master' });
    const doc = listed.json.results.find((s: { className: string }) => s.className === 'OnlyReads');
    expect(doc.classLevelPermissions).toEqual(whole);

    const answers = await anonymousAnswers('OnlyReads');
    expect(answers.find[0]).toBe(200);
    expect(answers.get[0]).toBe(200);
    expect(answers.count).toEqual([400, denied('count', 'OnlyReads')]);
    expect(answers.create).toEqual([400, denied('create', 'OnlyReads')]);
    expect(answers.update).toEqual([400, denied('update', 'OnlyReads')]);
    expect(answers.addField).toEqual([400, denied('update', 'OnlyReads')]);
    expect(answers.delete).toEqual([400, denied('delete', 'OnlyReads')]);
    // A signed-in user too: `{}` is master key only.
    const asAnn = await t.request('POST', '/classes/OnlyReads', {
      sessionToken: ann.token,
      body: { title: 'x' },
    });
    expect([asAnn.status, asAnn.json]).toEqual([400, denied('create', 'OnlyReads')]);
  });

  it('PUT /schemas replaces the whole CLP: the operations it leaves out are closed, the class was public', async () => {
    const made = await t.request('POST', '/schemas/WasOpen', {
      as: 'master',
      body: { fields: { title: { type: 'String' } } },
    });
    expect(made.json.classLevelPermissions).toEqual(OPEN);
    const res = await t.request('PUT', '/schemas/WasOpen', {
      as: 'master',
      body: { classLevelPermissions: { find: { requiresAuthentication: true }, create: { '*': true } } },
    });
    expect(res.status, res.text).toBe(200);
    const whole = { ...CLOSED, find: { requiresAuthentication: true }, create: { '*': true } };
    expect(res.json.classLevelPermissions).toEqual(whole);
    expect(await schemaOf('WasOpen')).toEqual(whole);
    const created = await t.request('POST', '/classes/WasOpen', { body: { title: 'kept' } });
    expect(created.status, created.text).toBe(201);
    const update = await t.request('PUT', `/classes/WasOpen/${created.json.objectId}`, {
      sessionToken: ann.token,
      body: { title: 'changed' },
    });
    expect([update.status, update.json]).toEqual([400, denied('update', 'WasOpen')]);
    const remove = await t.request('DELETE', `/classes/WasOpen/${created.json.objectId}`);
    expect([remove.status, remove.json]).toEqual([400, denied('delete', 'WasOpen')]);
  });

  it('a CLP of protectedFields only closes every operation, as the incumbent reads it', async () => {
    await t.request('POST', '/schemas/OnlyHidden', {
      as: 'master',
      body: { fields: { title: { type: 'String' } } },
    });
    const res = await t.request('PUT', '/schemas/OnlyHidden', {
      as: 'master',
      body: { classLevelPermissions: { protectedFields: { '*': ['title'] } } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.classLevelPermissions).toEqual({ ...CLOSED, protectedFields: { '*': ['title'] } });
    const answers = await anonymousAnswers('OnlyHidden');
    for (const op of ['find', 'get', 'count', 'create', 'update', 'delete'] as const) {
      expect(answers[op], op).toEqual([400, denied(op, 'OnlyHidden')]);
    }
  });

  it('an empty CLP is every operation master-only; names it keeps stay as sent', async () => {
    await t.request('POST', '/schemas/Emptied', { as: 'master', body: {} });
    const res = await t.request('PUT', '/schemas/Emptied', {
      as: 'master',
      body: { classLevelPermissions: {} },
    });
    expect(res.json.classLevelPermissions).toEqual(CLOSED);
    const pointers = await t.request('PUT', '/schemas/Emptied', {
      as: 'master',
      body: {
        fields: { owner: { type: 'Pointer', targetClass: '_User' } },
        classLevelPermissions: { readUserFields: ['owner'], get: { pointerFields: ['owner'] } },
      },
    });
    expect(pointers.json.classLevelPermissions).toEqual({
      ...CLOSED,
      get: { pointerFields: ['owner'] },
      readUserFields: ['owner'],
    });
  });

  it('a bad CLP is refused as before and changes nothing', async () => {
    await t.request('POST', '/schemas/Refused', { as: 'master', body: {} });
    const res = await t.request('PUT', '/schemas/Refused', {
      as: 'master',
      body: { classLevelPermissions: { find: { '*': true }, fly: { '*': true } } },
    });
    expect([res.status, res.json]).toEqual([
      400,
      { code: 107, error: 'fly is not a valid operation for class level permissions.' },
    ]);
    expect(await schemaOf('Refused')).toEqual(OPEN);
  });
});

describe('what keeps its access', () => {
  it('a class created without a CLP gets the public default, by POST /schemas and by a first write', async () => {
    const res = await t.request('POST', '/schemas/NoClp', { as: 'master', body: {} });
    expect(res.json.classLevelPermissions).toEqual(OPEN);
    const first = await t.request('POST', '/classes/FirstWrite', { as: 'master', body: { title: 'x' } });
    expect(first.status, first.text).toBe(201);
    expect(await schemaOf('FirstWrite')).toEqual(OPEN);
    const answers = await anonymousAnswers('NoClp');
    for (const op of ['find', 'get', 'count', 'create', 'update', 'addField', 'delete'] as const) {
      expect(answers[op]![0], op).toBe(op === 'create' ? 201 : 200);
    }
  });

  it('the built-in classes keep their default CLPs, _User with email protected', async () => {
    const user = await schemaOf('_User');
    expect(user).toEqual({ ...OPEN, protectedFields: { '*': ['email'] } });
    expect(await schemaOf('_Role')).toEqual({
      ...OPEN,
      create: {},
      update: {},
      delete: {},
      addField: {},
    });
    expect(await schemaOf('_Installation')).toEqual({ ...OPEN, protectedFields: { '*': ['deviceToken'] } });
    const signUp = await t.request('POST', '/users', {
      body: {
        username: 'builtin-kept',
        password: 'pw',
        email: 'kept@example.com',
        ACL: { '*': { read: true } },
      },
    });
    expect(signUp.status, signUp.text).toBe(201);
    const seen = await t.request('GET', `/users/${signUp.json.objectId}`);
    expect(seen.json.username).toBe('builtin-kept');
    expect(seen.json.email).toBeUndefined();
  });

  it('a built-in class saved without protectedFields keeps its default groups (email stays hidden)', async () => {
    const before = await schemaOf('_User');
    try {
      const { protectedFields: _dropped, ...operations } = before as Record<string, unknown>;
      const res = await t.request('PUT', '/schemas/_User', {
        as: 'master',
        body: { classLevelPermissions: { ...operations, addField: undefined } },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.json.classLevelPermissions).toEqual({
        ...OPEN,
        addField: {},
        protectedFields: { '*': ['email'] },
      });
      const signUp = await t.request('POST', '/users', {
        body: {
          username: 'still-hidden',
          password: 'pw',
          email: 'hidden@example.com',
          ACL: { '*': { read: true } },
        },
      });
      const seen = await t.request('GET', `/users/${signUp.json.objectId}`);
      expect(seen.json.username).toBe('still-hidden');
      expect(seen.json.email).toBeUndefined();
    } finally {
      await t.request('PUT', '/schemas/_User', { as: 'master', body: { classLevelPermissions: before } });
    }
    expect(await schemaOf('_User')).toEqual(before);
  });

  it('a CLP stored partially by an earlier version is read as it was: what it leaves out stays public', async () => {
    await t.request('POST', '/schemas/Legacy', {
      as: 'master',
      body: { fields: { title: { type: 'String' } } },
    });
    const { store, schemas } = t.service.core;
    // As an earlier version stored it: a document naming find only.
    const legacy: ClassSchema = {
      ...schemas.get('Legacy')!,
      classLevelPermissions: { find: { 'role:Nobody': true } },
    };
    await store.changeSchema(legacy, { addFields: [], deleteFields: [], addIndexes: [], dropIndexes: [] });
    await schemas.load();
    expect(await schemaOf('Legacy')).toEqual({ find: { 'role:Nobody': true } });
    const answers = await anonymousAnswers('Legacy');
    expect(answers.find).toEqual([400, denied('find', 'Legacy')]);
    expect(answers.create[0]).toBe(201);
    expect(answers.update[0]).toBe(200);
    expect(answers.delete[0]).toBe(200);
    // Saved again, the same document is stored whole, closed where it says nothing.
    await t.request('PUT', '/schemas/Legacy', {
      as: 'master',
      body: { classLevelPermissions: { find: { 'role:Nobody': true } } },
    });
    expect(await schemaOf('Legacy')).toEqual({ ...CLOSED, find: { 'role:Nobody': true } });
  });
});

describe('every path that sets a CLP', () => {
  it('an impact draft is planned as the save: the operations it leaves out are lost', async () => {
    await t.request('POST', '/schemas/Drafted', {
      as: 'master',
      body: { fields: { title: { type: 'String' } } },
    });
    const res = await t.request('POST', '/security/impact', {
      as: 'master',
      body: { className: 'Drafted', change: { kind: 'clp', classLevelPermissions: { find: { '*': true } } } },
    });
    expect(res.status, res.text).toBe(200);
    const shift = Object.fromEntries(
      res.json.operations.map((o: { operation: string; anonymous: string }) => [o.operation, o.anonymous]),
    );
    expect(shift).toEqual({
      find: 'same',
      get: 'loses',
      count: 'loses',
      create: 'loses',
      update: 'loses',
      delete: 'loses',
      addField: 'loses',
    });
    expect(res.json.anonymous).toEqual({ read: 'loses', write: 'loses' });
    // Nothing was written.
    expect(await schemaOf('Drafted')).toEqual(OPEN);
  });

  it('the explanation agrees: an operation the saved document left out is master-only', async () => {
    await t.request('POST', '/schemas/Explained', {
      as: 'master',
      body: { classLevelPermissions: { get: { '*': true } } },
    });
    const res = await t.request('POST', '/security/explain', {
      as: 'master',
      body: { operation: 'create', className: 'Explained', viewpoint: { kind: 'anonymous' } },
    });
    expect(res.json).toMatchObject({
      allowed: false,
      decidedBy: 'clp',
      ...{ code: 119, message: 'Permission denied for action create on class Explained.' },
      layers: [{ layer: 'clp', allowed: false, rule: 'clp.none' }, { skipped: true }, { skipped: true }],
    });
    const rules = await t.request('POST', '/security/rules', {
      as: 'master',
      body: { className: 'Explained' },
    });
    const create = rules.json.operations.find((o: { operation: string }) => o.operation === 'create');
    expect(create.anonymous).toMatchObject({ allowed: false, rule: 'clp.none', code: 119 });
  });

  it('an import stores the CLP of a schema line whole, closed where it says nothing', async () => {
    const source = await startService();
    const target = await startService();
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-clp-'));
    const filesOf = (s: TestService): TransferFiles => {
      const adapter = createFileAdapter(s.service.options, s.service.data);
      return {
        list: () => adapter.list(),
        read: (file, start, end) => adapter.read(file, start, end),
        save: (name, type, body, limit, createdAt) => adapter.save(name, type, body, limit, createdAt),
        delete: (name) => adapter.delete(name),
        validName: isStoredName,
      };
    };
    try {
      await source.request('POST', '/schemas/Moved', {
        as: 'master',
        body: { fields: { title: { type: 'String' } } },
      });
      const file = path.join(dir, 'app.ndjson');
      await exportToFile(source.service.data, filesOf(source), file, { service: 'test', sessions: false });
      const lines = readFileSync(file, 'utf8').split('\n');
      const at = lines.findIndex((l) => l.includes('"type":"schema"') && l.includes('"className":"Moved"'));
      const line = JSON.parse(lines[at]!);
      line.classLevelPermissions = { find: { '*': true } };
      lines[at] = JSON.stringify(line);
      writeFileSync(file, lines.join('\n'));
      await importApp(target.service.data, filesOf(target), file);
      const doc = await target.request('GET', '/schemas/Moved', { as: 'master' });
      expect(doc.json.classLevelPermissions).toEqual({ ...CLOSED, find: { '*': true } });
      const create = await target.request('POST', '/classes/Moved', { body: { title: 'x' } });
      expect([create.status, create.json]).toEqual([400, denied('create', 'Moved')]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await source.close();
      await target.close();
    }
  });
});
