import { expect } from 'vitest';
import { runScenarios } from './helpers/scenarios.ts';

runScenarios('config', [
  { name: 'starts empty', method: 'GET', path: '/config', status: 200, expect: { params: {} } },
  {
    name: 'PUT without the master key is refused and changes nothing',
    method: 'PUT',
    path: '/config',
    body: { params: { hacked: true } },
    status: 403,
    expect: { code: 119, error: 'unauthorized: master key is required' },
    after: async ({ t }) => {
      const res = await t.request('GET', '/config', { as: 'master' });
      expect(res.json.params.hacked).toBeUndefined();
    },
  },
  {
    name: 'master sets params, some of them master-only',
    method: 'PUT',
    path: '/config',
    as: 'master',
    body: { params: { welcome: 'hi', limit: 5, secret: 's3cr3t-value' }, masterKeyOnly: { secret: true } },
    status: 200,
    expect: { result: true },
  },
  {
    name: 'non-master reads omit master-only entries',
    method: 'GET',
    path: '/config',
    status: 200,
    expect: { params: { welcome: 'hi', limit: 5 } },
    notContains: ['s3cr3t-value', 'masterKeyOnly'],
  },
  {
    name: 'master reads everything with the flags',
    method: 'GET',
    path: '/config',
    as: 'master',
    status: 200,
    expect: { params: { welcome: 'hi', limit: 5, secret: 's3cr3t-value' }, masterKeyOnly: { secret: true } },
  },
  {
    name: 'a Delete op removes a param; other params are kept',
    method: 'PUT',
    path: '/config',
    as: 'master',
    body: { params: { limit: { __op: 'Delete' } } },
    status: 200,
    after: async ({ t }) => {
      const res = await t.request('GET', '/config', { as: 'master' });
      expect(res.json.params).toEqual({ welcome: 'hi', secret: 's3cr3t-value' });
    },
  },
  {
    name: 'a malformed body is 107',
    method: 'PUT',
    path: '/config',
    as: 'master',
    body: { welcome: 'no params wrapper' },
    status: 400,
    code: 107,
  },
  {
    name: 'masterKeyOnly must hold booleans',
    method: 'PUT',
    path: '/config',
    as: 'master',
    body: { params: { a: 1 }, masterKeyOnly: { a: 'yes' } },
    status: 400,
    code: 107,
    after: async ({ t }) => {
      const res = await t.request('GET', '/config', { as: 'master' });
      expect(res.json.params.a).toBeUndefined();
    },
  },
]);

runScenarios('analytics events', [
  {
    name: 'accepted with dimensions and at',
    method: 'POST',
    path: '/events/AppOpened',
    body: { dimensions: { source: 'push', plan: 'free' }, at: '2026-11-22T05:00:48.658Z' },
    status: 200,
    expect: {},
  },
  { name: 'accepted with no body', method: 'POST', path: '/events/page.view-1', status: 200 },
  {
    name: 'name outside [\\w-.] is 160',
    method: 'POST',
    path: '/events/bad%20name',
    body: {},
    status: 400,
    code: 160,
  },
  {
    name: 'dimensions must map strings to strings',
    method: 'POST',
    path: '/events/Search',
    body: { dimensions: { count: 3 } },
    status: 400,
    code: 111,
  },
  {
    name: 'at must be an ISO 8601 string',
    method: 'POST',
    path: '/events/Search',
    body: { at: 'yesterday' },
    status: 400,
    code: 111,
  },
  {
    name: 'more than eight dimensions are fine with the default adapter',
    method: 'POST',
    path: '/events/Wide',
    body: { dimensions: Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`d${i}`, `v${i}`])) },
    status: 200,
  },
  {
    name: 'needs application keys',
    method: 'POST',
    path: '/events/AppOpened',
    as: 'none',
    status: 403,
    code: 119,
  },
  {
    name: 'nothing is stored: no class appears',
    method: 'GET',
    path: '/schemas',
    as: 'master',
    status: 200,
    after: async (_ctx, res) => {
      const names = res.json.results.map((s: { className: string }) => s.className);
      expect(names.some((n: string) => /event|AppOpened/i.test(n))).toBe(false);
    },
  },
]);
