import { expect } from 'vitest';
import { runScenarios } from './helpers/scenarios.ts';

const where = (regex: string) => ({ where: { name: { $regex: regex } } });

runScenarios(
  'regular expressions that could stall the service',
  [
    {
      name: 'nested repetition runs in linear time (RE2) for any caller',
      method: 'GET',
      path: '/classes/Word',
      query: where('^(a+)+$'),
      status: 200,
    },
    {
      name: 'another exponential shape for a backtracking engine runs too',
      method: 'GET',
      path: '/classes/Word',
      query: where('^(\\w+\\s?)*$'),
      status: 200,
      after: async (_ctx, res) =>
        expect(res.json.results.map((r: { name: string }) => r.name).sort()).toEqual(['Apple', 'banana']),
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
      name: 'a pattern RE2 cannot run (a backreference) is a 102 naming the field',
      method: 'GET',
      path: '/classes/Word',
      query: where('(a)\\1'),
      status: 400,
      code: 102,
      errorContains: 'Invalid where: $regex on name is not a valid regular expression',
    },
    {
      name: 'a pattern whose compiled program is too large is refused, master key or not',
      method: 'GET',
      path: '/classes/Word',
      as: 'master',
      query: where('(abcdefghij){1000}'),
      status: 400,
      code: 102,
      errorContains: 'is too large',
    },
    {
      name: 'a very long pattern is refused for the master key too',
      method: 'GET',
      path: '/classes/Word',
      as: 'master',
      query: where('a'.repeat(1001)),
      status: 400,
      code: 102,
      errorContains: '1000',
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
