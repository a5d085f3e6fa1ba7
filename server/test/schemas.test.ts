import { expect } from 'vitest';
import { runScenarios } from './helpers/scenarios.ts';
import { storeIndexes } from './helpers/service.ts';

const MASTER_REQUIRED = { code: 119, error: 'unauthorized: master key is required' };

runScenarios('schemas', [
  {
    name: 'GET /schemas needs the master key',
    method: 'GET',
    path: '/schemas',
    status: 403,
    expect: MASTER_REQUIRED,
  },
  {
    name: 'POST /schemas/<C> needs the master key',
    method: 'POST',
    path: '/schemas/Nope',
    body: { fields: {} },
    status: 403,
    expect: MASTER_REQUIRED,
  },
  {
    name: 'PUT /schemas/<C> needs the master key',
    method: 'PUT',
    path: '/schemas/Game',
    body: {},
    status: 403,
    code: 119,
  },
  {
    name: 'DELETE /schemas/<C> needs the master key',
    method: 'DELETE',
    path: '/schemas/Game',
    status: 403,
    code: 119,
  },
  {
    name: 'DELETE /purge/<C> needs the master key',
    method: 'DELETE',
    path: '/purge/Game',
    status: 403,
    code: 119,
  },
  {
    name: 'creates a class with typed fields, CLP and an index',
    method: 'POST',
    path: '/schemas/Game',
    as: 'master',
    body: {
      className: 'Game',
      fields: {
        score: { type: 'Number' },
        name: { type: 'String' },
        owner: { type: 'Pointer', targetClass: '_User' },
        players: { type: 'Relation', targetClass: '_User' },
        where: { type: 'GeoPoint' },
      },
      classLevelPermissions: { find: { '*': true }, get: { requiresAuthentication: true }, addField: {} },
      indexes: { score_1: { score: 1 } },
    },
    status: 200,
    expect: {
      className: 'Game',
      fields: {
        objectId: { type: 'String' },
        createdAt: { type: 'Date' },
        updatedAt: { type: 'Date' },
        ACL: { type: 'ACL' },
        score: { type: 'Number' },
        owner: { type: 'Pointer', targetClass: '_User' },
        players: { type: 'Relation', targetClass: '_User' },
      },
      classLevelPermissions: { get: { requiresAuthentication: true }, addField: {} },
      indexes: { score_1: { score: 1 } },
    },
  },
  {
    name: 'the index exists in the store',
    method: 'GET',
    path: '/schemas/Game',
    as: 'master',
    status: 200,
    after: async ({ t }) => {
      expect(await storeIndexes(t, 'Game')).toContain('Game:score_1');
    },
  },
  {
    name: 'creating an existing class is 103',
    method: 'POST',
    path: '/schemas/Game',
    as: 'master',
    body: {},
    status: 400,
    code: 103,
    errorContains: 'already exists',
  },
  {
    name: 'a JSON null is not a schema document: 107 for POST and PUT, the class unchanged',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    body: null,
    status: 400,
    code: 107,
    expect: { error: 'The schema document must be a JSON object.' },
    after: async ({ t }) => {
      const posted = await t.request('POST', '/schemas/NullBody', {
        as: 'master',
        rawBody: 'null',
        headers: { 'Content-Type': 'application/json' },
      });
      expect(posted.status).toBe(400);
      expect(posted.json).toEqual({ code: 107, error: 'The schema document must be a JSON object.' });
      const game = await t.request('GET', '/schemas/Game', { as: 'master' });
      expect(Object.keys(game.json.fields)).toContain('score');
      expect((await t.request('GET', '/schemas/NullBody', { as: 'master' })).status).toBe(400);
    },
  },
  {
    name: 'class name in the body must match the url',
    method: 'POST',
    path: '/schemas/Other',
    as: 'master',
    body: { className: 'Different' },
    status: 400,
    code: 103,
  },
  {
    name: 'invalid class name is 103',
    method: 'POST',
    path: '/schemas/9bad',
    as: 'master',
    body: {},
    status: 400,
    code: 103,
  },
  {
    name: 'invalid field name is 105',
    method: 'POST',
    path: '/schemas/BadField',
    as: 'master',
    body: { fields: { 'bad-name': { type: 'String' } } },
    status: 400,
    code: 105,
    after: async ({ t }) => {
      const res = await t.request('GET', '/schemas/BadField', { as: 'master' });
      expect(res.json.code).toBe(103);
    },
  },
  {
    name: 'invalid field type is 111',
    method: 'POST',
    path: '/schemas/BadType',
    as: 'master',
    body: { fields: { a: { type: 'Integer' } } },
    status: 400,
    code: 111,
  },
  {
    name: 'a pointer needs a targetClass',
    method: 'POST',
    path: '/schemas/BadPointer',
    as: 'master',
    body: { fields: { p: { type: 'Pointer' } } },
    status: 400,
    code: 111,
    errorContains: 'targetClass',
  },
  {
    name: 'unknown CLP operation is refused',
    method: 'POST',
    path: '/schemas/BadClp',
    as: 'master',
    body: { classLevelPermissions: { fly: { '*': true } } },
    status: 400,
    code: 107,
    errorContains: 'fly',
  },
  {
    name: 'index on a missing field is 255',
    method: 'POST',
    path: '/schemas/BadIndex',
    as: 'master',
    body: { fields: { a: { type: 'String' } }, indexes: { b_1: { b: 1 } } },
    status: 400,
    code: 255,
  },
  {
    name: 'PUT adds a field',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    body: { fields: { level: { type: 'Number' } } },
    status: 200,
    expect: { fields: { level: { type: 'Number' } } },
  },
  {
    name: 'PUT adding an existing field is 255',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    body: { fields: { level: { type: 'String' } } },
    status: 400,
    code: 255,
    errorContains: 'exists',
  },
  {
    name: 'PUT deleting a missing field is 255',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    body: { fields: { ghost: { __op: 'Delete' } } },
    status: 400,
    code: 255,
    errorContains: 'does not exist',
  },
  {
    name: 'PUT on a missing class is 103',
    method: 'PUT',
    path: '/schemas/Missing',
    as: 'master',
    body: { fields: { a: { type: 'String' } } },
    status: 400,
    code: 103,
  },
  {
    name: 'built-in fields cannot be changed',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    body: { fields: { objectId: { __op: 'Delete' } } },
    status: 400,
    code: 105,
  },
  {
    name: 'PUT deletes a field and its data',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    before: async ({ t, vars }) => {
      const res = await t.request('POST', '/classes/Game', {
        as: 'master',
        body: { name: 'chess', score: 3, level: 9 },
      });
      vars.gameId = res.json.objectId;
    },
    body: { fields: { level: { __op: 'Delete' } } },
    status: 200,
    after: async ({ t, vars }, res) => {
      expect(res.json.fields.level).toBeUndefined();
      const row = await t.request('GET', `/classes/Game/${vars.gameId}`, { as: 'master' });
      expect(row.json).toMatchObject({ name: 'chess', score: 3 });
      expect(row.json.level).toBeUndefined();
      // Re-adding the field with another type starts empty: the old data is gone.
      await t.request('PUT', '/schemas/Game', {
        as: 'master',
        body: { fields: { level: { type: 'String' } } },
      });
      const again = await t.request('GET', `/classes/Game/${vars.gameId}`, { as: 'master' });
      expect(again.json.level).toBeUndefined();
    },
  },
  {
    name: 'PUT sets CLP and adds and drops indexes',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    body: {
      classLevelPermissions: { find: {}, count: { 'role:Admin': true } },
      indexes: { name_1: { name: -1 }, score_1: { __op: 'Delete' } },
    },
    status: 200,
    expect: {
      classLevelPermissions: { find: {}, count: { 'role:Admin': true } },
      indexes: { name_1: { name: -1 } },
    },
    after: async ({ t }, res) => {
      expect(res.json.indexes.score_1).toBeUndefined();
      const names = await storeIndexes(t, 'Game');
      expect(names).toContain('Game:name_1');
      expect(names).not.toContain('Game:score_1');
    },
  },
  {
    name: 'dropping a missing index is 255',
    method: 'PUT',
    path: '/schemas/Game',
    as: 'master',
    body: { indexes: { nope: { __op: 'Delete' } } },
    status: 400,
    code: 255,
  },
  {
    name: 'a class with rows cannot be deleted',
    method: 'DELETE',
    path: '/schemas/Game',
    as: 'master',
    status: 400,
    code: 255,
    errorContains: 'not empty',
  },
  {
    name: 'purge deletes every row',
    method: 'DELETE',
    path: '/purge/Game',
    as: 'master',
    status: 200,
    expect: {},
    after: async ({ t }) => {
      const res = await t.request('GET', '/classes/Game', { as: 'master', query: { count: 1, limit: 0 } });
      expect(res.json.count).toBe(0);
    },
  },
  {
    name: 'an empty class is deleted',
    method: 'DELETE',
    path: '/schemas/Game',
    as: 'master',
    status: 200,
    after: async ({ t }) => {
      const res = await t.request('GET', '/schemas/Game', { as: 'master' });
      expect(res.status).toBe(400);
      expect(res.json.code).toBe(103);
    },
  },
  {
    name: 'built-in classes are listed',
    method: 'GET',
    path: '/schemas',
    as: 'master',
    status: 200,
    after: async (_ctx, res) => {
      const names = res.json.results.map((s: { className: string }) => s.className);
      expect(names).toEqual(expect.arrayContaining(['_User', '_Role', '_Session', '_Installation']));
    },
  },
  {
    name: 'built-in classes cannot be deleted',
    method: 'DELETE',
    path: '/schemas/_User',
    as: 'master',
    status: 400,
    code: 255,
  },
  {
    name: 'a schema document that is not an object is refused',
    method: 'PUT',
    path: '/schemas/_User',
    as: 'master',
    body: [1, 2],
    status: 400,
    code: 107,
  },
]);
