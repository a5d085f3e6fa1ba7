import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePush, startFakePush } from '../../server/test/helpers/fake-push.ts';
import { type BffFetch, type StartedBff, startBff, TEST_PASSWORD } from './helpers/bff.ts';

const APP = '/bff/apps/test-app';
let fake: FakePush;
let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;

beforeAll(async () => {
  fake = await startFakePush();
  t = await startBff({ service: { push: fake.options, analytics: { adapter: 'store' } } });
  admin = await t.login('admin', TEST_PASSWORD);
  viewer = await t.login('viewer', TEST_PASSWORD);
});
afterAll(async () => {
  await t.close();
  await fake.close();
});

const upload = (who: BffFetch, name: string, text: string, type: string) =>
  who(`${APP}/files/${name}`, {
    method: 'POST',
    rawBody: text,
    headers: { 'Content-Type': 'application/octet-stream', 'X-Upload-Content-Type': type },
  });

describe('console files', () => {
  it('uploads through the bff (audited), previews through it, lists orphans and deletes', async () => {
    const up = await upload(admin, 'logo.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>', 'image/svg+xml');
    expect(up.status, up.text).toBe(201);
    expect(up.json.name).toMatch(/^[0-9a-f]{32}_logo\.svg$/);
    const down = await admin.get(`${APP}/files/${up.json.name}`);
    expect(down.status).toBe(200);
    expect(down.text).toBe('<svg xmlns="http://www.w3.org/2000/svg"/>');
    expect(down.headers.get('content-type')).toBe('image/svg+xml');
    expect(down.headers.get('x-content-type-options')).toBe('nosniff');
    expect(down.headers.get('content-disposition')).toMatch(/^attachment/);
    const orphans = await viewer.get(`${APP}/files/orphans`);
    expect(orphans.json.results.map((f: { name: string }) => f.name)).toContain(up.json.name);
    const audit = await admin.get('/bff/audit?action=file.upload');
    expect(audit.json.results[0]).toMatchObject({ action: 'file.upload', target: up.json.name });
    expect((await viewer(`${APP}/files/${up.json.name}`, { method: 'DELETE' })).status).toBe(403);
    expect((await admin(`${APP}/files/${up.json.name}`, { method: 'DELETE' })).status).toBe(200);
    const gone = await admin.get(`${APP}/files/${up.json.name}`);
    expect(gone).toMatchObject({ status: 404, json: { code: 101, error: 'File not found.' } });
  });

  it('read-only users cannot upload', async () => {
    const res = await upload(viewer, 'x.txt', 'x', 'text/plain');
    expect(res).toMatchObject({ status: 403 });
  });
});

describe('console push', () => {
  it('counts the audience per device type, sends, and lists the status and installations', async () => {
    for (const [id, deviceType, token, channels] of [
      ['c-1', 'ios', 'tok-c1', ['news']],
      ['c-2', 'android', 'tok-c2', ['news']],
      ['c-3', 'android', 'tok-c3', ['sport']],
    ] as const) {
      const res = await t.service.request('POST', '/installations', {
        as: 'master',
        body: { installationId: id, deviceType, deviceToken: token, channels },
      });
      expect(res.status).toBe(201);
    }
    const all = await admin.get(`${APP}/push/audience?where=${encodeURIComponent('{}')}`);
    expect(all.json).toEqual({ total: 3, byType: { ios: 1, android: 2 } });
    const news = await admin.get(`${APP}/push/audience?channels=news`);
    expect(news.json).toEqual({ total: 2, byType: { ios: 1, android: 1 } });
    const bad = await admin.get(`${APP}/push/audience?where=nope`);
    expect(bad).toMatchObject({
      status: 400,
      json: { code: 107, error: 'Invalid audience: where must be a JSON object.' },
    });

    const sent = await admin.post(`${APP}/push`, { where: { deviceType: 'android' }, data: { alert: 'Hi' } });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.json.pushStatusId).toMatch(/^\w{10}$/);
    const deadline = Date.now() + 15_000;
    let status: any;
    while (Date.now() < deadline) {
      status = (await viewer.get(`${APP}/push/status`)).json.results.find(
        (r: { objectId: string }) => r.objectId === sent.json.pushStatusId,
      );
      if (status?.status === 'succeeded') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toMatchObject({ status: 'succeeded', numSent: 2, sentPerType: { android: 2 } });
    expect((await viewer.post(`${APP}/push`, { where: {}, data: { alert: 'x' } })).status).toBe(403);

    const list = await viewer.get(`${APP}/people/installations?deviceType=android&channel=sport`);
    expect(list.json.count).toBe(1);
    expect(list.json.results[0]).toMatchObject({ installationId: 'c-3', deviceToken: 'tok-c3…' });
  });

  it('lists installations through the one installations endpoint (Push and Security): no second route', async () => {
    const res = await viewer.get(`${APP}/installations`);
    expect(res).toMatchObject({ status: 404, json: { code: 107, error: 'No such console route.' } });
  });
});

describe('console analytics', () => {
  it('answers counts per name over time when the service stores events', async () => {
    for (const at of ['2026-04-01T08:10:00Z', '2026-04-01T08:20:00Z', '2026-04-01T09:00:00Z']) {
      await t.service.request('POST', '/events/Signup', { body: { dimensions: { plan: 'free' }, at } });
    }
    const res = await viewer.get(`${APP}/analytics?interval=hour`);
    expect(res.json).toEqual({
      enabled: true,
      results: [
        { name: 'Signup', bucket: '2026-04-01T08', count: 2 },
        { name: 'Signup', bucket: '2026-04-01T09', count: 1 },
      ],
    });
  });

  it('says when events are not stored', async () => {
    const off = await startBff();
    try {
      const who = await off.login('viewer', TEST_PASSWORD);
      expect((await who.get(`${APP}/analytics`)).json).toEqual({ enabled: false, results: [] });
    } finally {
      await off.close();
    }
  });
});
