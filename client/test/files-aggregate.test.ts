import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePush, startFakePush } from '../../server/test/helpers/fake-push.ts';
import { KEYS, startService, type TestService } from '../../server/test/helpers/service.ts';
import { AuthenticationError, createClient, type LogEntry } from '../src/index.node.ts';

let svc: TestService;
const log: LogEntry[] = [];
const master = () =>
  createClient({
    serverURL: svc.url,
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    masterKey: KEYS.masterKey,
  });
const publicClient = () =>
  createClient({
    serverURL: svc.url,
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    logger: (e) => log.push(e),
  });

beforeAll(async () => {
  svc = await startService({ fileUpload: { enableForPublic: true }, analytics: { adapter: 'store' } });
});
afterAll(() => svc.close());

describe('client file helpers', () => {
  it('uploads a Node stream and a Blob, downloads as a stream, a range and a Blob', async () => {
    const c = publicClient();
    const parts = ['hello ', 'streamed ', 'world'];
    const up = await c.uploadFile('greeting.txt', Readable.from(parts.map((p) => Buffer.from(p))), {
      contentType: 'text/plain',
    });
    expect(up.success).toBe(true);
    if (!up.success) return;
    expect(up.data.name).toMatch(/_greeting\.txt$/);
    const down = await c.downloadFile(up.data);
    expect(down.success).toBe(true);
    if (!down.success) return;
    expect(down.data.contentType).toBe('text/plain');
    expect(down.data.size).toBe(20);
    const chunks: Buffer[] = [];
    for await (const chunk of Readable.fromWeb(down.data.body as never)) chunks.push(Buffer.from(chunk));
    expect(Buffer.concat(chunks).toString()).toBe('hello streamed world');
    const part = await c.downloadFile(up.data.name, { range: [6, 13] });
    expect(part.success && part.status).toBe(206);
    if (part.success) expect(await new Response(part.data.body).text()).toBe('streamed');

    const blob = new Blob(['<b>x</b>'], { type: 'text/html' });
    const upBlob = await c.uploadFile('page.html', blob);
    expect(upBlob.success).toBe(true);
    if (!upBlob.success) return;
    const got = await c.downloadBlob(upBlob.data);
    expect(got.success).toBe(true);
    if (got.success) {
      expect(got.data.type).toBe('text/html');
      expect(await got.data.text()).toBe('<b>x</b>');
    }
    const missing = await c.downloadFile(`${'0'.repeat(32)}_nope.txt`);
    expect(missing).toEqual({ success: false, status: 404, code: 101, error: 'File not found.' });
  });

  it('deleteFile and aggregate need the master key: refused locally without one', async () => {
    log.length = 0;
    await expect(publicClient().deleteFile('x.txt')).rejects.toThrow(AuthenticationError);
    await expect(publicClient().aggregate('Thing', [])).rejects.toThrow(/aggregate requires master key/);
    expect(log).toHaveLength(0);
    const m = master();
    const up = await m.uploadFile('del.txt', new TextEncoder().encode('x'));
    expect(up.success).toBe(true);
    if (up.success) expect(await m.deleteFile(up.data.name)).toMatchObject({ success: true, data: {} });
  });
});

describe('client aggregate and trackEvent', () => {
  it('aggregates with the master key; trackEvent sends its timestamp', async () => {
    const m = master();
    for (const n of [1, 2, 3]) await m.create('Score', { n, team: n % 2 ? 'odd' : 'even' });
    const res = await m.aggregate('Score', [
      { $group: { _id: '$team', total: { $sum: '$n' } } },
      { $sort: { objectId: 1 } },
    ]);
    expect(res).toMatchObject({
      success: true,
      data: {
        results: [
          { objectId: 'even', total: 2 },
          { objectId: 'odd', total: 4 },
        ],
      },
    });
    const at = new Date('2026-05-05T05:05:05.000Z');
    expect((await publicClient().trackEvent('Opened', { os: 'ios' }, at)).success).toBe(true);
    const rows = await m.request('GET', '/classes/_AnalyticsEvent', { useMasterKey: true });
    expect(rows.success && rows.data.results).toMatchObject([
      { name: 'Opened', at: { __type: 'Date', iso: at.toISOString() }, hour: '2026-05-05T05' },
    ]);
  });
});

describe('client sendPush', () => {
  let fake: FakePush;
  let pushSvc: TestService;
  beforeAll(async () => {
    fake = await startFakePush();
    pushSvc = await startService({ push: fake.options });
  });
  afterAll(async () => {
    await pushSvc.close();
    await fake.close();
  });

  it('sends with the master key against the real service and answers the push status id', async () => {
    const m = createClient({
      serverURL: pushSvc.url,
      applicationId: KEYS.appId,
      restAPIKey: KEYS.restAPIKey,
      masterKey: KEYS.masterKey,
    });
    const inst = await m.request('POST', '/installations', {
      useMasterKey: true,
      body: { installationId: 'client-push-1', deviceType: 'android', deviceToken: 'tok-client-1' },
    });
    expect(inst.success).toBe(true);
    const res = await m.sendPush({
      where: { installationId: 'client-push-1' },
      data: { alert: 'From the client' },
    });
    expect(res).toMatchObject({ success: true, status: 200, data: { result: true } });
    if (!res.success) return;
    const id = res.data.pushStatusId!;
    expect(id).toMatch(/^\w{10}$/);
    let status: Record<string, unknown> | undefined;
    for (let i = 0; i < 300 && status?.status !== 'succeeded'; i++) {
      const got = await m.request('GET', `/classes/_PushStatus/${id}`, { useMasterKey: true });
      if (got.success) status = got.data as Record<string, unknown>;
      if (status?.status !== 'succeeded') await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toMatchObject({
      objectId: id,
      status: 'succeeded',
      numSent: 1,
      sentPerType: { android: 1 },
    });
    expect(fake.sends.map((s) => [s.provider, s.token, s.body.message.notification.body])).toEqual([
      ['fcm', 'tok-client-1', 'From the client'],
    ]);
  });
});
