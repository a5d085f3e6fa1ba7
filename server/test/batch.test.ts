import { expect } from 'vitest';
import { runScenarios } from './helpers/scenarios.ts';

const count = async (t: any, className: string) =>
  (await t.request('GET', `/classes/${className}`, { as: 'master', query: { count: 1, limit: 0 } })).json
    .count;

runScenarios(
  'batch',
  [
    {
      name: 'runs sub-requests in order, with or without the mount path',
      method: 'POST',
      path: '/batch',
      body: {
        requests: [
          { method: 'POST', path: '/api/classes/Item', body: { n: 1 } },
          { method: 'POST', path: '/classes/Item', body: { n: 2 } },
          { method: 'GET', path: '/classes/Item', body: { where: { n: { $gte: 1 } }, order: 'n' } },
        ],
      },
      status: 200,
      after: async (_ctx, res) => {
        expect(res.json).toHaveLength(3);
        expect(res.json[0].success.objectId).toMatch(/^[A-Za-z0-9]{10}$/);
        expect(res.json[2].success.results.map((r: { n: number }) => r.n)).toEqual([1, 2]);
      },
    },
    {
      name: 'a failing member answers its error and the others still run',
      method: 'POST',
      path: '/batch',
      body: {
        requests: [
          { method: 'POST', path: '/classes/Item', body: { n: 'not a number' } },
          { method: 'POST', path: '/classes/Item', body: { n: 3 } },
        ],
      },
      status: 200,
      expect: [{ error: { code: 111 } }, { success: {} }],
    },
    {
      name: 'transaction: a failing member rolls the others back',
      method: 'POST',
      path: '/batch',
      before: async ({ t, vars }) => {
        vars.before = String(await count(t, 'Item'));
      },
      body: {
        transaction: true,
        requests: [
          { method: 'POST', path: '/classes/Item', body: { n: 100 } },
          { method: 'PUT', path: '/classes/Item/doesNotExist', body: { n: 5 } },
        ],
      },
      status: 404,
      code: 101,
      after: async ({ t, vars }) => {
        expect(await count(t, 'Item')).toBe(Number(vars.before));
      },
    },
    {
      name: 'transaction: all members succeed together',
      method: 'POST',
      path: '/batch',
      body: {
        transaction: true,
        requests: [
          { method: 'POST', path: '/classes/Tx', body: { n: 1 } },
          { method: 'POST', path: '/classes/Tx', body: { n: 2 } },
        ],
      },
      as: 'master',
      status: 200,
      after: async ({ t }) => {
        expect(await count(t, 'Tx')).toBe(2);
      },
    },
    {
      name: 'transaction: a failed class creation inside the batch leaves no class behind',
      method: 'POST',
      path: '/batch',
      as: 'master',
      body: {
        transaction: true,
        requests: [
          { method: 'POST', path: '/classes/Ghost', body: { n: 1 } },
          { method: 'POST', path: '/classes/Ghost', body: { n: 'two' } },
        ],
      },
      status: 400,
      code: 111,
      after: async ({ t }) => {
        const res = await t.request('GET', '/schemas/Ghost', { as: 'master' });
        expect(res.json.code).toBe(103);
      },
    },
    {
      name: 'members run with the caller credentials (no master escalation)',
      method: 'POST',
      path: '/batch',
      body: { requests: [{ method: 'GET', path: '/schemas' }] },
      status: 200,
      expect: [{ error: { code: 119, error: 'unauthorized: master key is required' } }],
    },
    {
      name: 'over batchRequestLimit is refused with 107 before anything runs',
      method: 'POST',
      path: '/batch',
      before: async ({ t, vars }) => {
        vars.before = String(await count(t, 'Item'));
      },
      body: {
        requests: Array.from({ length: 6 }, (_, i) => ({
          method: 'POST',
          path: '/classes/Item',
          body: { n: i },
        })),
      },
      status: 400,
      code: 107,
      errorContains: 'Batch request count of 6 exceeds the maximum of 5.',
      after: async ({ t, vars }) => {
        expect(await count(t, 'Item')).toBe(Number(vars.before));
      },
    },
    {
      name: 'the master key is not subject to the batch limit',
      method: 'POST',
      path: '/batch',
      as: 'master',
      body: {
        requests: Array.from({ length: 6 }, (_, i) => ({
          method: 'POST',
          path: '/classes/Item',
          body: { n: i },
        })),
      },
      status: 200,
    },
    {
      name: 'a malformed member refuses the whole batch before anything runs',
      method: 'POST',
      path: '/batch',
      before: async ({ t, vars }) => {
        vars.before = String(await count(t, 'Item'));
      },
      body: {
        requests: [
          { method: 'POST', path: '/classes/Item', body: { n: 1 } },
          { method: 'FLY', path: '/x' },
        ],
      },
      status: 400,
      code: 107,
      after: async ({ t, vars }) => {
        expect(await count(t, 'Item')).toBe(Number(vars.before));
      },
    },
    {
      name: 'requests must be an array',
      method: 'POST',
      path: '/batch',
      body: { requests: 'nope' },
      status: 400,
      code: 107,
    },
    {
      name: 'batches do not nest',
      method: 'POST',
      path: '/batch',
      body: { requests: [{ method: 'POST', path: '/batch', body: { requests: [] } }] },
      status: 200,
      expect: [{ error: { code: 107 } }],
    },
    {
      name: 'an unknown route inside a batch is an error for that member',
      method: 'POST',
      path: '/batch',
      body: { requests: [{ method: 'GET', path: '/nowhere' }] },
      status: 200,
      expect: [{ error: { code: 107 } }],
    },
  ],
  {
    serviceOptions: { allowClientClassCreation: true, requestComplexity: { batchRequestLimit: 5 } },
    setup: async ({ t }) => {
      await t.request('POST', '/classes/Item', { as: 'master', body: { n: 0 } });
    },
  },
);
