import { expect } from 'vitest';
import { runScenarios } from './helpers/scenarios.ts';

const where = (regex: string) => ({ where: { name: { $regex: regex } } });

runScenarios(
  'regular expressions that could stall the service',
  [
    {
      name: 'nested repetition is refused for a caller without the master key',
      method: 'GET',
      path: '/classes/Word',
      query: where('^(a+)+$'),
      status: 400,
      code: 102,
      errorContains: 'too complex',
    },
    {
      name: 'another exponential shape is refused',
      method: 'GET',
      path: '/classes/Word',
      query: where('^(\\w+\\s?)*$'),
      status: 400,
      code: 102,
    },
    {
      name: 'a very long pattern is refused',
      method: 'GET',
      path: '/classes/Word',
      query: where('a'.repeat(1001)),
      status: 400,
      code: 102,
      errorContains: '1000',
    },
    {
      name: 'ordinary patterns still work',
      method: 'GET',
      path: '/classes/Word',
      query: { where: { name: { $regex: '^ap+le$', $options: 'i' } } },
      status: 200,
      after: async (_ctx, res) => {
        expect(res.json.results.map((r: { name: string }) => r.name)).toEqual(['Apple']);
      },
    },
    {
      name: 'a refused pattern inside a subquery is refused too',
      method: 'GET',
      path: '/classes/Word',
      query: {
        where: {
          name: {
            $select: { query: { className: 'Word', where: { name: { $regex: '(a+)+' } } }, key: 'name' },
          },
        },
      },
      status: 400,
      code: 102,
    },
    {
      name: 'the master key is trusted with any valid pattern',
      method: 'GET',
      path: '/classes/Word',
      as: 'master',
      query: where('^(a+)+$'),
      status: 200,
    },
  ],
  {
    setup: async ({ t }) => {
      for (const name of ['Apple', 'banana'])
        await t.request('POST', '/classes/Word', { as: 'master', body: { name } });
    },
  },
);
