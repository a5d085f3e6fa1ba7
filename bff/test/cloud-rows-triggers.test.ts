import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from '../../server/test/helpers/cloud.ts';
import { type Receiver, startReceiver } from '../../server/test/helpers/receiver.ts';
import { ROWS_RUN_MAX, triggersByClass } from '../src/routes/cloud.ts';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/** The Cloud section lists every trigger per class; a function runs on selected rows. */
const base = '/bff/apps/test-app/cloud';
let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  t = await startBff({ service: { cloud: CLOUD_MODULE, hooks: { allowInsecureUrls: true } } });
  admin = await t.login('admin');
  viewer = await t.login('viewer');
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('every trigger per class', () => {
  it('in-process and webhook triggers of a class, with their kind, in the order they run', async () => {
    const url = `${receiver.url}/hook`;
    // Zebra's only trigger is a webhook.
    for (const cls of ['Note', 'Zebra']) {
      expect((await t.service.request('POST', `/schemas/${cls}`, { as: 'master', body: {} })).status).toBe(
        200,
      );
    }
    for (const [className, triggerName] of [
      ['Note', 'afterSave'],
      ['Zebra', 'beforeDelete'],
    ]) {
      const made = await admin.post(`${base}/hooks/triggers`, { className, triggerName, url });
      expect(made.status, made.text).toBe(201);
    }
    const res = await viewer.get(base);
    expect(res.status).toBe(200);
    const classes = res.json.triggersByClass as Array<{ className: string; triggers: unknown[] }>;
    expect(classes.map((c) => c.className)).toEqual([...classes.map((c) => c.className)].sort());
    expect(classes.find((c) => c.className === 'Note')!.triggers).toEqual([
      { triggerName: 'beforeSave', kind: 'cloud code' },
      { triggerName: 'afterSave', kind: 'cloud code' },
      { triggerName: 'afterSave', kind: 'webhook', url },
      { triggerName: 'beforeDelete', kind: 'cloud code' },
      { triggerName: 'afterDelete', kind: 'cloud code' },
      { triggerName: 'beforeFind', kind: 'cloud code' },
    ]);
    expect(classes.find((c) => c.className === 'Zebra')!.triggers).toEqual([
      { triggerName: 'beforeDelete', kind: 'webhook', url },
    ]);
  });

  it('groups and orders without the service', () => {
    expect(
      triggersByClass(
        [
          { className: 'B', triggerName: 'afterFind' },
          { className: 'B', triggerName: 'beforeSave' },
          { className: 'A', triggerName: 'zCustom' },
        ],
        [{ className: 'B', triggerName: 'beforeSave', url: 'https://x' }],
      ),
    ).toEqual([
      { className: 'A', triggers: [{ triggerName: 'zCustom', kind: 'cloud code' }] },
      {
        className: 'B',
        triggers: [
          { triggerName: 'beforeSave', kind: 'cloud code' },
          { triggerName: 'beforeSave', kind: 'webhook', url: 'https://x' },
          { triggerName: 'afterFind', kind: 'cloud code' },
        ],
      },
    ]);
  });
});

describe('POST /bff/apps/:appId/cloud/functions/:name/rows', () => {
  it('calls the function once per row with its className and objectId, and answers per row (audited once)', async () => {
    const ids: string[] = [];
    for (const title of ['one', 'two']) {
      ids.push(
        (await t.service.request('POST', '/classes/Note', { as: 'master', body: { title } })).json.objectId,
      );
    }
    const res = await admin.post(`${base}/functions/echo/rows`, {
      className: 'Note',
      objectIds: ids,
      params: { reason: 'check' },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      results: ids.map((id) => ({
        objectId: id,
        ok: true,
        result: { reason: 'check', className: 'Note', objectId: id },
      })),
      succeeded: 2,
      failed: 0,
    });
    const failing = await admin.post(`${base}/functions/fail/rows`, {
      className: 'Note',
      objectIds: [ids[0]],
    });
    expect(failing.json).toEqual({
      results: [{ objectId: ids[0], ok: false, code: 141, error: 'it broke' }],
      succeeded: 0,
      failed: 1,
    });
    const audit = await admin.get('/bff/audit?action=cloud.function.runOnRows');
    expect(audit.json.results.map((e: { target: string }) => e.target)).toEqual(['fail', 'echo']);
    expect(audit.json.results[1].before).toEqual({
      className: 'Note',
      objectIds: ids,
      params: { reason: 'check' },
    });
  });

  it('refuses a bad body with 107 and read-only users with 403, calling nothing', async () => {
    const none = await admin.post(`${base}/functions/echo/rows`, { className: 'Note', objectIds: [] });
    expect(none.status).toBe(400);
    expect(none.json.code).toBe(107);
    expect(none.json.error).toMatch(/^Invalid function run on rows: /);
    const many = Array.from({ length: ROWS_RUN_MAX + 1 }, (_, i) => `id${String(i).padStart(8, '0')}`);
    expect(
      (await admin.post(`${base}/functions/echo/rows`, { className: 'Note', objectIds: many })).status,
    ).toBe(400);
    const ro = await viewer.post(`${base}/functions/echo/rows`, {
      className: 'Note',
      objectIds: ['abcdefghij'],
    });
    expect(ro).toMatchObject({
      status: 403,
      json: { code: 119, error: 'Read-only console users cannot change anything.' },
    });
  });
});
