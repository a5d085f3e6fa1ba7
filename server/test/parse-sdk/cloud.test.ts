import { fileURLToPath } from 'node:url';
import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePush, startFakePush } from '../helpers/fake-push.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * Cloud functions, jobs and push with the stock `parse` SDK (v8), unchanged, against the real
 * service; then the exact answers over REST.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

const CLOUD = fileURLToPath(new URL('../fixtures/sdk-cloud.ts', import.meta.url));
const JOBS = ['CloudJob1', 'CloudJob2', 'CloudJobFailing'];

let t: TestService;
let fake: FakePush;

beforeAll(async () => {
  fake = await startFakePush();
  t = await startService({ cloud: CLOUD, push: fake.options });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  // One attempt: a failure must show up as a failure, not as a slow retry.
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('cloud code, jobs and push with the stock Parse JS SDK', () => {
  it('runs a function: its value, and 141 with the thrown text', async () => {
    expect(await Parse.Cloud.run('bar', { key1: 'value2', key2: 'value1' })).toBe('Foo');
    await expect(Parse.Cloud.run('bar', { key2: 'other' })).rejects.toMatchObject({
      code: 141,
      message: 'bad stuff happened',
    });
    await expect(Parse.Cloud.run('unknown_function', {})).rejects.toMatchObject({
      code: 141,
      message: 'Invalid function: "unknown_function"',
    });
  });

  it('a function that returns nothing yields undefined; one that returns null yields null', async () => {
    expect(await Parse.Cloud.run('nothing', {})).toBeUndefined();
    expect(await Parse.Cloud.run('nullish', {})).toBeNull();
  });

  it('startJob answers the job status id, and the status row tells how the job went', async () => {
    const id = await Parse.Cloud.startJob('CloudJob1', { startedBy: 'Monty Python' });
    expect(id).toMatch(/^[A-Za-z0-9]{10}$/);
    await t.service.jobs.runner.idle();
    const status = await Parse.Cloud.getJobStatus(id);
    expect(status.get('status')).toBe('succeeded');
    expect(status.get('params')).toEqual({ startedBy: 'Monty Python' });

    const failing = await Parse.Cloud.startJob('CloudJobFailing', {});
    await t.service.jobs.runner.idle();
    const failed = await Parse.Cloud.getJobStatus(failing);
    expect(failed.get('status')).toBe('failed');
    expect(failed.get('message')).toBe('cloud job failed');
  });

  it('an unknown job is refused with 141 "Invalid job."', async () => {
    await expect(Parse.Cloud.startJob('bad_job', {})).rejects.toMatchObject({
      code: 141,
      message: 'Invalid job.',
    });
  });

  it('getJobsData lists the jobs and the ones a schedule uses', async () => {
    expect(await Parse.Cloud.getJobsData()).toEqual({ in_use: [], jobs: JOBS });
    for (let i = 0; i < 2; i++) {
      const schedule = await t.request('POST', '/classes/_JobSchedule', {
        as: 'master',
        body: { jobName: 'CloudJob2', cron: '0 3 * * *' },
      });
      expect(schedule.status, schedule.text).toBe(201);
    }
    expect(await Parse.Cloud.getJobsData()).toEqual({ in_use: ['CloudJob2'], jobs: JOBS });
  });

  it('Push.send answers the push status id, which getPushStatus reads', async () => {
    const id = await Parse.Push.send({
      data: { alert: 'We return status!' },
      where: { deviceType: { $eq: 'random' } },
    });
    expect(id).toMatch(/^[A-Za-z0-9]{10}$/);
    const status = await Parse.Push.getPushStatus(id);
    expect(status.id).toBe(id);
  });
});

describe('cloud code, jobs and push over REST', () => {
  it('a function that returns nothing answers {} (no result key); null answers {"result":null}', async () => {
    const nothing = await t.request('POST', '/functions/nothing', { body: {} });
    expect([nothing.status, nothing.text]).toEqual([200, '{}']);
    const nullish = await t.request('POST', '/functions/nullish', { body: {} });
    expect([nullish.status, nullish.text]).toEqual([200, '{"result":null}']);
    // The same in a batch.
    const batch = await t.request('POST', '/batch', {
      body: { requests: [{ method: 'POST', path: '/functions/nothing', body: {} }] },
    });
    expect(batch.json).toEqual([{ success: {} }]);
  });

  it('an unknown job answers 400, 141 "Invalid job." and starts nothing', async () => {
    const res = await t.request('POST', '/jobs/bad_job', { as: 'master', body: {} });
    expect([res.status, res.json]).toEqual([400, { code: 141, error: 'Invalid job.' }]);
    const rows = await t.request('GET', '/classes/_JobStatus', {
      as: 'master',
      query: { where: { jobName: 'bad_job' }, count: 1, limit: 0 },
    });
    expect(rows.json.count).toBe(0);
  });

  it('GET /cloud_code/jobs/data: the jobs and the ones in use, master only', async () => {
    const res = await t.request('GET', '/cloud_code/jobs/data', { as: 'master' });
    expect([res.status, res.json]).toEqual([200, { in_use: ['CloudJob2'], jobs: JOBS }]);
    for (const as of ['rest', 'js'] as const) {
      const refused = await t.request('GET', '/cloud_code/jobs/data', { as });
      expect([refused.status, refused.json]).toEqual([
        403,
        { code: 119, error: 'unauthorized: master key is required' },
      ]);
    }
  });

  it('the job and push status ids come as X-Backend- and X-Parse- headers, and browsers may read both', async () => {
    const job = await t.request('POST', '/jobs/CloudJob1', { as: 'master', body: {} });
    expect(job.status).toBe(200);
    const jobId = job.headers.get('X-Backend-Job-Status-Id');
    expect(jobId).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(job.headers.get('X-Parse-Job-Status-Id')).toBe(jobId);

    const push = await t.request('POST', '/push', {
      as: 'master',
      body: { where: { deviceType: 'ios' }, data: { alert: 'hi' } },
    });
    expect(push.status, push.text).toBe(200);
    const pushId = push.headers.get('X-Backend-Push-Status-Id');
    expect(pushId).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(push.headers.get('X-Parse-Push-Status-Id')).toBe(pushId);

    for (const res of [job, push]) {
      expect(res.headers.get('Access-Control-Allow-Origin')).toBe('*');
      expect(res.headers.get('Access-Control-Expose-Headers')).toBe(
        'X-Backend-Job-Status-Id, X-Parse-Job-Status-Id, X-Backend-Push-Status-Id, X-Parse-Push-Status-Id, Location, X-Request-Id',
      );
    }
    await t.service.jobs.runner.idle();
  });
});
