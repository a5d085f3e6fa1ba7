import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from '../../server/test/helpers/cloud.ts';
import { type Receiver, startReceiver } from '../../server/test/helpers/receiver.ts';
import { type BffFetch, startBff, TEST_PASSWORD } from './helpers/bff.ts';

type Started = Awaited<ReturnType<typeof startBff>>;
let t: Started;
let admin: BffFetch;
let viewer: BffFetch;
let receiver: Receiver;
const base = '/bff/apps/test-app/cloud';

beforeAll(async () => {
  receiver = await startReceiver();
  t = await startBff({ service: { cloud: CLOUD_MODULE, hooks: { allowInsecureUrls: true } } });
  admin = await t.login('admin', TEST_PASSWORD);
  viewer = await t.login('viewer', TEST_PASSWORD);
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('console writes fire triggers', () => {
  it('a row created and deleted in the console runs beforeSave, afterSave and the delete triggers', async () => {
    const created = await admin.post('/bff/apps/test-app/classes/Note', { title: '  from the console ' });
    expect(created.status).toBe(201);
    const id = created.json.objectId as string;
    const stored = await t.service.request('GET', `/classes/Note/${id}`, { as: 'master' });
    expect(stored.json.title).toBe('from the console');
    const refused = await admin.post('/bff/apps/test-app/classes/Note', { title: 'forbidden' });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ code: 142, error: 'Notes may not be called forbidden.' });
    expect((await admin.delete(`/bff/apps/test-app/classes/Note/${id}`)).status).toBe(200);
    await t.service.service.cloud.triggers.idle();
    const traces = await t.service.request('GET', '/classes/TriggerLog', {
      as: 'master',
      query: { where: { rowId: id }, order: 'createdAt' },
    });
    expect(
      traces.json.results.map((r: { trigger: string; master: boolean }) => [r.trigger, r.master]),
    ).toEqual([
      ['afterSave', true],
      ['afterDelete', true],
    ]);
  });
});

describe('/bff/apps/:appId/cloud', () => {
  it('lists functions, jobs and triggers', async () => {
    const res = await viewer.get(base);
    expect(res.status).toBe(200);
    expect(res.json.functions).toContain('whoami');
    expect(res.json.jobs).toEqual(['countNotes', 'failingJob', 'tick', 'waitABit', 'whoRuns']);
    expect(res.json.webhookFunctions).toEqual([]);
  });

  it('runs a function as master, or as a chosen user without the password; shows errors and time', async () => {
    const user = await t.service.request('POST', '/users', {
      body: { username: 'lin', password: 'secret pw' },
    });
    const asMaster = await admin.post(`${base}/functions/whoami`, {});
    expect(asMaster.json).toMatchObject({ ok: true, result: { master: true, user: null } });
    expect(typeof asMaster.json.durationMs).toBe('number');
    const asUser = await admin.post(`${base}/functions/whoami`, { userId: user.json.objectId });
    expect(asUser.json).toMatchObject({
      ok: true,
      result: { master: false, user: user.json.objectId, username: 'lin' },
    });
    const failed = await admin.post(`${base}/functions/fail`, { params: {} });
    expect(failed.json).toMatchObject({ ok: false, code: 141, error: 'it broke' });
    // The short session the console made for the call is gone.
    const sessions = await t.service.request('GET', '/sessions', {
      as: 'master',
      query: { where: { user: { __type: 'Pointer', className: '_User', objectId: user.json.objectId } } },
    });
    expect(sessions.json.results).toHaveLength(1);
    expect((await viewer.post(`${base}/functions/whoami`, {})).status).toBe(403);
    const audit = await admin.get('/bff/audit?action=cloud.function.run');
    expect(audit.json.results[0]).toMatchObject({ user: 'admin', target: 'fail' });
  });

  it('runs a job and lists its status history', async () => {
    const run = await admin.post(`${base}/jobs/countNotes`, { params: { n: 1 } });
    expect(run.status).toBe(200);
    expect(run.json.statusId).toMatch(/^[A-Za-z0-9]{10}$/);
    await t.service.service.jobs.runner.idle();
    const history = await viewer.get(`${base}/jobs/status?jobName=countNotes`);
    expect(history.json.results[0]).toMatchObject({
      objectId: run.json.statusId,
      status: 'succeeded',
      params: { n: 1 },
    });
    const unknown = await admin.post(`${base}/jobs/nope`, {});
    expect(unknown.json).toMatchObject({ code: 141 });
  });

  it('creates, edits, pauses and deletes schedules; shows the service refusals', async () => {
    const created = await admin.post(`${base}/schedules`, {
      jobName: 'tick',
      cron: '0 9 * * 1',
      timeZone: 'Europe/Paris',
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      jobName: 'tick',
      cron: '0 9 * * 1',
      enabled: true,
      nextRunAt: { __type: 'Date' },
    });
    const id = created.json.objectId;
    const paused = await admin.put(`${base}/schedules/${id}`, { enabled: false });
    expect(paused.json.enabled).toBe(false);
    expect(paused.json.nextRunAt).toBeUndefined();
    const bad = await admin.put(`${base}/schedules/${id}`, { cron: 'every day' });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(142);
    expect((await viewer.get(`${base}/schedules`)).json.results).toHaveLength(1);
    expect((await admin.delete(`${base}/schedules/${id}`)).status).toBe(200);
    expect((await viewer.get(`${base}/schedules`)).json.results).toEqual([]);
  });

  it('schedules carry a start date and a catch-up policy; the list says the service default', async () => {
    const list = await viewer.get(`${base}/schedules`);
    expect(list.status).toBe(200);
    expect(list.json.catchUp).toEqual({ policy: 'once', max: 24 });
    const created = await admin.post(`${base}/schedules`, {
      jobName: 'tick',
      cron: '30 9 * * 1',
      timeZone: 'Europe/Paris',
      startAfter: '2031-03-01T08:00:00.000Z',
      catchUp: 'each',
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      catchUp: 'each',
      startAfter: { __type: 'Date', iso: '2031-03-01T08:00:00.000Z' },
      // 2031-03-03 is the first Monday from the start: 09:30 in Paris is 08:30 UTC.
      nextRunAt: { __type: 'Date', iso: '2031-03-03T08:30:00.000Z' },
    });
    const id = created.json.objectId;
    const back = await admin.put(`${base}/schedules/${id}`, { catchUp: null, startAfter: null });
    expect(back.status).toBe(200);
    expect(back.json.catchUp).toBeUndefined();
    expect(back.json.startAfter).toBeUndefined();
    const bad = await admin.put(`${base}/schedules/${id}`, { catchUp: 'sometimes' });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({
      code: 107,
      error: expect.stringMatching(/^Invalid schedule: catchUp: /),
    });
    expect((await admin.delete(`${base}/schedules/${id}`)).status).toBe(200);
  });

  it('registers, changes and deletes webhooks, passes refusals on, and shows deliveries', async () => {
    const url = `${receiver.url}/fn`;
    const created = await admin.post(`${base}/hooks/functions`, { functionName: 'remote', url });
    expect(created.status).toBe(201);
    const twice = await admin.post(`${base}/hooks/functions`, { functionName: 'remote', url });
    expect(twice.json).toEqual({ code: 143, error: 'A function hook named remote already exists.' });
    expect((await admin.post(`${base}/functions/remote`, {})).json).toMatchObject({ ok: true, result: true });
    const changed = await admin.put(`${base}/hooks/functions/remote`, { url: `${receiver.url}/other` });
    expect(changed.json).toEqual({ functionName: 'remote', url: `${receiver.url}/other` });
    const trigger = await admin.post(`${base}/hooks/triggers`, {
      className: 'Note',
      triggerName: 'afterDelete',
      url,
    });
    expect(trigger.status).toBe(201);
    expect((await viewer.get(base)).json.webhookTriggers).toEqual([
      { className: 'Note', triggerName: 'afterDelete', url },
    ]);
    const deliveries = await viewer.get(`${base}/deliveries?kind=function&status=succeeded`);
    expect(deliveries.json.results[0]).toMatchObject({
      functionName: 'remote',
      status: 'succeeded',
      attempt: 1,
    });
    expect((await admin.delete(`${base}/hooks/triggers/Note/afterDelete`)).json).toEqual({});
    expect((await admin.delete(`${base}/hooks/functions/remote`)).json).toEqual({});
    expect((await viewer.post(`${base}/hooks/functions`, { functionName: 'x', url })).status).toBe(403);
  });
});
