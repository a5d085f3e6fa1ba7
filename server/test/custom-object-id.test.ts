import { expect } from 'vitest';
import { runScenarios, type Scenario } from './helpers/scenarios.ts';

/** Master-key creates may choose their objectId (an import that keeps ids); nobody else may. */
const scenarios: Scenario[] = [
  {
    name: 'a master-key create keeps the objectId it chose',
    method: 'POST',
    path: '/classes/Kept',
    as: 'master',
    body: { objectId: 'imported_ID-1', n: 1 },
    status: 201,
    expect: { objectId: 'imported_ID-1' },
    after: async ({ t }) => {
      const res = await t.request('GET', '/classes/Kept/imported_ID-1', { as: 'master' });
      expect(res.status, res.text).toBe(200);
      expect(res.json).toMatchObject({ objectId: 'imported_ID-1', n: 1 });
    },
  },
  {
    name: 'an objectId that exists answers 137 and changes nothing',
    method: 'POST',
    path: '/classes/Kept',
    as: 'master',
    body: { objectId: 'imported_ID-1', n: 2 },
    status: 400,
    code: 137,
    errorContains: 'A duplicate value for a field with unique values was provided.',
    after: async ({ t }) => {
      const res = await t.request('GET', '/classes/Kept/imported_ID-1', { as: 'master' });
      expect(res.json.n).toBe(1);
    },
  },
  {
    name: 'the REST key may not choose an objectId (105, as before)',
    method: 'POST',
    path: '/classes/Open',
    as: 'rest',
    body: { objectId: 'mine123456', n: 1 },
    status: 400,
    code: 105,
    errorContains: 'objectId is an invalid field name.',
    after: async ({ t }) => {
      const res = await t.request('GET', '/classes/Open', { as: 'master', query: { count: 1, limit: 0 } });
      expect(res.json.count).toBe(0);
    },
  },
  {
    name: 'a master objectId with other characters is refused (105)',
    method: 'POST',
    path: '/classes/Kept',
    as: 'master',
    body: { objectId: 'has space', n: 1 },
    status: 400,
    code: 105,
    errorContains: 'objectId must be 1 to 64 letters, digits, "_" or "-".',
  },
  {
    name: 'a master objectId longer than 64 characters is refused (105)',
    method: 'POST',
    path: '/classes/Kept',
    as: 'master',
    body: { objectId: 'x'.repeat(65), n: 1 },
    status: 400,
    code: 105,
  },
  {
    name: 'a master objectId that is not a string is refused (105)',
    method: 'POST',
    path: '/classes/Kept',
    as: 'master',
    body: { objectId: 12345, n: 1 },
    status: 400,
    code: 105,
    after: async ({ t }) => {
      const res = await t.request('GET', '/classes/Kept', { as: 'master', query: { count: 1, limit: 0 } });
      expect(res.json.count).toBe(1);
    },
  },
  {
    name: 'batch creates with the master key keep their objectIds too',
    method: 'POST',
    path: '/batch',
    as: 'master',
    body: {
      requests: [
        { method: 'POST', path: '/classes/Kept', body: { objectId: 'batch-a', n: 3 } },
        { method: 'POST', path: '/classes/Kept', body: { objectId: 'imported_ID-1', n: 4 } },
      ],
    },
    status: 200,
    expect: [
      { success: { objectId: 'batch-a' } },
      { error: { code: 137, error: 'A duplicate value for a field with unique values was provided.' } },
    ],
  },
];

runScenarios('master-key creates may choose their objectId', scenarios, {
  setup: async ({ t }) => {
    const res = await t.request('POST', '/schemas/Open', {
      as: 'master',
      body: {
        className: 'Open',
        fields: { n: { type: 'Number' } },
        classLevelPermissions: { create: { '*': true }, find: { '*': true }, get: { '*': true } },
      },
    });
    if (res.status !== 200) throw new Error(`setup: ${res.status} ${res.text}`);
  },
});
