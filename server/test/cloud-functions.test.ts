import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createService } from '../src/index.ts';
import { CLOUD_MODULE, finished } from './helpers/cloud.ts';
import { runScenarios } from './helpers/scenarios.ts';
import { KEYS, startService } from './helpers/service.ts';

runScenarios(
  'POST /functions/<name>',
  [
    {
      name: 'anonymous caller with app keys',
      method: 'POST',
      path: '/functions/hello',
      status: 200,
      expect: { result: 'Hello stranger' },
    },
    {
      name: 'runs with the caller session user, never its password',
      method: 'POST',
      path: '/functions/whoami',
      sessionToken: '{token}',
      headers: { 'X-Backend-Installation-Id': 'inst-1' },
      status: 200,
      expect: {
        result: {
          username: 'ada',
          hasPassword: false,
          master: false,
          installationId: 'inst-1',
          ip: '127.0.0.1',
        },
      },
      after: async ({ vars }, res) => expect(res.json.result.user).toBe(vars.userId),
    },
    {
      name: 'master key: master flag, no user',
      method: 'POST',
      path: '/functions/whoami',
      as: 'master',
      status: 200,
      expect: { result: { user: null, master: true } },
    },
    {
      name: 'params are the body',
      method: 'POST',
      path: '/functions/echo',
      body: { a: 1, b: [true] },
      status: 200,
      expect: { result: { a: 1, b: [true] } },
    },
    {
      name: 'no return value answers {} (no result key)',
      method: 'POST',
      path: '/functions/nothing',
      status: 200,
      after: async (_ctx, res) => {
        expect(res.text).toBe('{}');
      },
    },
    {
      name: 'unknown function',
      method: 'POST',
      path: '/functions/nope',
      status: 400,
      code: 141,
      errorContains: 'Invalid function: "nope"',
    },
    {
      name: 'a thrown Error: 141 with its text, no stack',
      method: 'POST',
      path: '/functions/fail',
      status: 400,
      code: 141,
      expect: { error: 'it broke' },
      notContains: ['at ', '.ts:'],
    },
    {
      name: 'a thrown {code, message}: 141 with the message',
      method: 'POST',
      path: '/functions/failObject',
      status: 400,
      code: 141,
      expect: { error: 'object failure' },
    },
    {
      name: 'params that are not an object',
      method: 'POST',
      path: '/functions/echo',
      body: [1, 2],
      status: 400,
      code: 107,
      errorContains: 'params must be a JSON object',
    },
    {
      name: 'requireUser refuses an anonymous caller',
      method: 'POST',
      path: '/functions/strict',
      body: { n: 1 },
      status: 400,
      code: 142,
      expect: { error: 'Validation failed. Please login to continue.' },
    },
    {
      name: 'a required param missing',
      method: 'POST',
      path: '/functions/strict',
      sessionToken: '{token}',
      body: {},
      status: 400,
      code: 142,
      expect: { error: 'Validation failed. Please specify data for n.' },
    },
    {
      name: 'a param of the wrong type',
      method: 'POST',
      path: '/functions/strict',
      sessionToken: '{token}',
      body: { n: 'one' },
      status: 400,
      code: 142,
      expect: { error: 'Validation failed. Invalid type for n. Expected: Number.' },
    },
    {
      name: 'valid params and a user',
      method: 'POST',
      path: '/functions/strict',
      sessionToken: '{token}',
      body: { n: 2 },
      status: 200,
      expect: { result: 'ok' },
    },
    {
      name: 'requireMaster refuses a user',
      method: 'POST',
      path: '/functions/mastersOnly',
      sessionToken: '{token}',
      status: 400,
      code: 142,
      expect: { error: 'Validation failed. Master key is required to complete this request.' },
    },
    {
      name: 'requireMaster with the master key',
      method: 'POST',
      path: '/functions/mastersOnly',
      as: 'master',
      status: 200,
      expect: { result: 'ok' },
    },
    {
      name: 'a role the caller does not hold',
      method: 'POST',
      path: '/functions/admins',
      sessionToken: '{token}',
      status: 400,
      code: 142,
      expect: { error: 'Validation failed. The caller must hold one of the roles: Admin.' },
    },
    {
      name: 'a role the caller holds',
      method: 'POST',
      path: '/functions/admins',
      sessionToken: '{adminToken}',
      status: 200,
      expect: { result: 'ok' },
    },
    {
      name: 'api.asCaller counts under access control, api.asMaster everything',
      method: 'POST',
      path: '/functions/countSecrets',
      sessionToken: '{token}',
      status: 200,
      expect: { result: { asMaster: 2, asCaller: 1 } },
    },
    {
      name: 'a bogus session token',
      method: 'POST',
      path: '/functions/hello',
      sessionToken: 'r:bogus',
      status: 400,
      code: 209,
    },
    {
      name: 'without app keys',
      method: 'POST',
      path: '/functions/hello',
      as: 'none',
      status: 403,
      code: 119,
    },
  ],
  {
    serviceOptions: { cloud: CLOUD_MODULE },
    setup: async ({ t, vars }) => {
      const ada = await t.request('POST', '/users', { body: { username: 'ada', password: 'pw' } });
      vars.token = ada.json.sessionToken;
      vars.userId = ada.json.objectId;
      const admin = await t.request('POST', '/users', { body: { username: 'root', password: 'pw' } });
      vars.adminToken = admin.json.sessionToken;
      await t.request('POST', '/roles', {
        as: 'master',
        body: {
          name: 'Admin',
          ACL: { '*': { read: true } },
          users: {
            __op: 'AddRelation',
            objects: [{ __type: 'Pointer', className: '_User', objectId: admin.json.objectId }],
          },
        },
      });
      await t.request('POST', '/classes/Secret', {
        as: 'master',
        body: { title: 'public', ACL: { '*': { read: true } } },
      });
      await t.request('POST', '/classes/Secret', { as: 'master', body: { title: 'private', ACL: {} } });
    },
  },
);

runScenarios(
  'POST /jobs/<name>',
  [
    {
      name: 'master key: {} and the status id header; the job runs in the background',
      method: 'POST',
      path: '/jobs/countNotes',
      as: 'master',
      body: { limit: 3 },
      status: 200,
      expect: {},
      after: async ({ t }, res) => {
        const id = res.headers.get('X-Backend-Job-Status-Id')!;
        expect(id).toMatch(/^[A-Za-z0-9]{10}$/);
        expect(res.json).toEqual({});
        const row = await finished(t, id);
        expect(row).toMatchObject({
          jobName: 'countNotes',
          source: 'api',
          status: 'succeeded',
          message: '0 notes',
          params: { limit: 3 },
        });
        expect(Date.parse(row.finishedAt.iso)).toBeGreaterThanOrEqual(Date.parse(row.startedAt.iso));
      },
    },
    {
      name: 'a session user runs it as that user',
      method: 'POST',
      path: '/jobs/whoRuns',
      sessionToken: '{token}',
      status: 200,
      after: async ({ t }, res) => {
        const row = await finished(t, res.headers.get('X-Backend-Job-Status-Id')!);
        expect(row).toMatchObject({ status: 'succeeded', message: 'user bob' });
      },
    },
    {
      name: 'a failing job: failed, with the error text as message',
      method: 'POST',
      path: '/jobs/failingJob',
      as: 'master',
      status: 200,
      after: async ({ t }, res) => {
        const row = await finished(t, res.headers.get('X-Backend-Job-Status-Id')!);
        expect(row).toMatchObject({ status: 'failed', message: 'job broke' });
        expect(row.finishedAt.iso).toBeDefined();
      },
    },
    {
      name: 'anonymous callers are refused, and nothing runs',
      method: 'POST',
      path: '/jobs/countNotes',
      status: 403,
      code: 119,
      expect: { error: 'Permission denied: a job runs with the master key or a session token.' },
      after: async ({ t }) => {
        const rows = await t.request('GET', '/classes/_JobStatus', {
          as: 'master',
          query: { where: { jobName: 'countNotes' }, count: 1, limit: 0 },
        });
        expect(rows.json.count).toBe(1);
      },
    },
    {
      name: 'unknown job',
      method: 'POST',
      path: '/jobs/nope',
      as: 'master',
      status: 400,
      code: 141,
      expect: { error: 'Invalid job.' },
    },
    {
      name: 'params must be an object',
      method: 'POST',
      path: '/jobs/countNotes',
      as: 'master',
      body: 'x',
      status: 400,
      code: 107,
    },
    {
      name: '_JobStatus is master-only',
      method: 'GET',
      path: '/classes/_JobStatus',
      sessionToken: '{token}',
      status: 403,
      code: 119,
    },
    {
      name: 'GET /cloudCode lists what the module registered',
      method: 'GET',
      path: '/cloudCode',
      as: 'master',
      status: 200,
      expect: {
        jobs: ['countNotes', 'failingJob', 'tick', 'waitABit', 'whoRuns'],
        triggers: expect.arrayContaining([
          { className: 'Note', triggerName: 'beforeSave' },
          { className: '_User', triggerName: 'beforeLogin' },
        ]),
      },
    },
    {
      name: 'GET /cloudCode is master-only',
      method: 'GET',
      path: '/cloudCode',
      sessionToken: '{token}',
      status: 403,
      code: 119,
      expect: { error: 'unauthorized: master key is required' },
    },
    {
      name: 'serverInfo announces hooks and jobs',
      method: 'GET',
      path: '/serverInfo',
      status: 200,
      expect: { features: { hooks: { create: true }, cloudCode: { jobs: true } } },
    },
  ],
  {
    serviceOptions: { cloud: CLOUD_MODULE },
    setup: async ({ t, vars }) => {
      const bob = await t.request('POST', '/users', { body: { username: 'bob', password: 'pw' } });
      vars.token = bob.json.sessionToken;
    },
  },
);

describe('the option cloud', () => {
  it('a missing module stops the start, naming the option', async () => {
    await expect(
      createService({ ...KEYS, dataDir: '/tmp/unused', cloud: '/nonexistent/cloud.ts' }),
    ).rejects.toThrow('Invalid option "cloud": no such file: /nonexistent/cloud.ts');
  });

  it('a module without a default function stops the start', async () => {
    const file = fileURLToPath(new URL('./helpers/clock.ts', import.meta.url));
    await expect(createService({ ...KEYS, dataDir: '/tmp/unused', cloud: file })).rejects.toThrow(
      'must export a default function that receives the registry',
    );
  });

  it('without a module, functions are unknown and GET /cloudCode is empty', async () => {
    const t = await startService();
    try {
      const res = await t.request('POST', '/functions/hello');
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 141, error: 'Invalid function: "hello"' });
      const code = await t.request('GET', '/cloudCode', { as: 'master' });
      expect(code.json).toEqual({ functions: [], jobs: [], triggers: [], webhookFunctions: [] });
    } finally {
      await t.close();
    }
  });
});

describe('the demo cloud module of npm start', () => {
  it('its trigger refuses an empty title and trims one; its job counts posts', async () => {
    const demo = fileURLToPath(new URL('../src/demo-cloud.ts', import.meta.url));
    const t = await startService({ cloud: demo });
    try {
      const empty = await t.request('POST', '/classes/Post', { as: 'master', body: { title: '   ' } });
      expect(empty.json).toEqual({ code: 142, error: 'A post needs a title.' });
      const post = await t.request('POST', '/classes/Post', { as: 'master', body: { title: ' Hi ' } });
      expect(
        (await t.request('GET', `/classes/Post/${post.json.objectId}`, { as: 'master' })).json.title,
      ).toBe('Hi');
      const run = await t.request('POST', '/jobs/countPosts', { as: 'master' });
      expect(await finished(t, run.headers.get('X-Backend-Job-Status-Id')!)).toMatchObject({
        status: 'succeeded',
        message: '1 posts',
      });
    } finally {
      await t.close();
    }
  });
});

describe('shutdown', () => {
  it('close waits for a running job at most shutdownGraceMs', async () => {
    const t = await startService({ cloud: CLOUD_MODULE, shutdownGraceMs: 50 });
    const run = await t.request('POST', '/jobs/waitABit', { as: 'master', body: { ms: 5000 } });
    expect(run.status).toBe(200);
    const started = performance.now();
    await t.close();
    expect(performance.now() - started).toBeLessThan(4000);
  });
});
