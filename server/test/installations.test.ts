import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setClp, type TestUser } from './helpers/access-world.ts';
import { buildDocWorld, text } from './helpers/probe-worlds.ts';
import { startService, type TestService } from './helpers/service.ts';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => {
  await t?.close();
});

const header = (id: string) => ({ 'X-Backend-Installation-Id': id });
let n = 0;
const nextId = () => `inst-${Date.now()}-${n++}`;

async function register(id = nextId(), extra: Record<string, unknown> = {}) {
  const res = await t.request('POST', '/installations', {
    headers: header(id),
    body: { deviceType: 'ios', deviceToken: `tok-${id}`, ...extra },
  });
  expect(res.status, res.text).toBe(201);
  return { id, objectId: res.json.objectId as string };
}

describe('_Installation (docs/protocol.md#built-in-classes)', () => {
  it('is created by an anonymous caller; the header becomes installationId', async () => {
    const { id, objectId } = await register();
    const row = await t.request('GET', `/installations/${objectId}`, { as: 'master' });
    expect(row.json).toMatchObject({ installationId: id, deviceType: 'ios' });
  });

  it('needs deviceType and an installation id (135), and a body id must match the header (119)', async () => {
    const before = (await t.request('GET', '/installations', { as: 'master', query: { count: 1, limit: 0 } }))
      .json.count;
    const noType = await t.request('POST', '/installations', { headers: header(nextId()), body: {} });
    expect(noType.json).toEqual({ code: 135, error: 'deviceType must be specified in this operation.' });
    const noId = await t.request('POST', '/installations', { body: { deviceType: 'android' } });
    expect(noId.json).toEqual({ code: 135, error: 'installationId must be specified in this operation.' });
    const mismatch = await t.request('POST', '/installations', {
      headers: header(nextId()),
      body: { deviceType: 'android', installationId: 'someone-else' },
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.json).toEqual({
      code: 119,
      error: 'installationId does not match the X-Backend-Installation-Id header.',
    });
    const after = (await t.request('GET', '/installations', { as: 'master', query: { count: 1, limit: 0 } }))
      .json.count;
    expect(after).toBe(before);
  });

  it('keeps installationId unique (137)', async () => {
    const { id } = await register();
    const again = await t.request('POST', '/installations', {
      headers: header(id),
      body: { deviceType: 'ios' },
    });
    expect(again.status).toBe(400);
    expect(again.json.code).toBe(137);
  });

  it('is found and deleted by master only, whatever the CLP', async () => {
    const { objectId } = await register();
    const masterOnly = { code: 119, error: 'unauthorized: master key is required' };
    const find = await t.request('GET', '/installations', {});
    expect([find.status, find.json]).toEqual([403, masterOnly]);
    const del = await t.request('DELETE', `/installations/${objectId}`, {});
    expect([del.status, del.json]).toEqual([403, masterOnly]);
    expect((await t.request('GET', '/installations', { as: 'master' })).status).toBe(200);
    expect((await t.request('DELETE', `/installations/${objectId}`, { as: 'master' })).status).toBe(200);
  });

  it('answers get and count by CLP', async () => {
    const { objectId } = await register();
    expect((await t.request('GET', `/installations/${objectId}`, {})).status).toBe(200);
    const count = await t.request('GET', '/installations', { query: { count: 1, limit: 0 } });
    expect(count.status).toBe(200);
    expect(count.json.count).toBeGreaterThan(0);
  });

  it('is updated only by the device whose id matches, else master', async () => {
    const { id, objectId } = await register();
    const own = await t.request('PUT', `/installations/${objectId}`, {
      headers: header(id),
      body: { badge: 3 },
    });
    expect(own.status).toBe(200);
    const none = await t.request('PUT', `/installations/${objectId}`, { body: { badge: 4 } });
    expect([none.status, none.json]).toEqual([404, { code: 101, error: 'Object not found.' }]);
    const other = await t.request('PUT', `/installations/${objectId}`, {
      headers: header('x'),
      body: { badge: 5 },
    });
    expect(other.status).toBe(404);
    expect((await t.request('GET', `/installations/${objectId}`, { as: 'master' })).json.badge).toBe(3);
    const master = await t.request('PUT', `/installations/${objectId}`, { as: 'master', body: { badge: 6 } });
    expect(master.status).toBe(200);
  });

  it('keeps installationId and deviceType immutable (136), even for master', async () => {
    const { id, objectId } = await register();
    const change = await t.request('PUT', `/installations/${objectId}`, {
      headers: header(id),
      body: { installationId: 'new' },
    });
    expect(change.json).toEqual({ code: 136, error: 'installationId may not be changed in this operation.' });
    const type = await t.request('PUT', `/installations/${objectId}`, {
      as: 'master',
      body: { deviceType: 'web' },
    });
    expect(type.json).toEqual({ code: 136, error: 'deviceType may not be changed in this operation.' });
    const same = await t.request('PUT', `/installations/${objectId}`, {
      headers: header(id),
      body: { installationId: id, badge: 1 },
    });
    expect(same.status).toBe(200);
  });

  it('applies protectedFields and addField CLP', async () => {
    const { id, objectId } = await register();
    await setClp(t, '_Installation', {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: { '*': true },
      update: { '*': true },
      delete: { '*': true },
      addField: {},
      protectedFields: { '*': ['deviceToken'] },
    });
    const got = await t.request('GET', `/installations/${objectId}`, {});
    expect(got.json.installationId).toBe(id);
    expect(got.json).not.toHaveProperty('deviceToken');
    expect((await t.request('GET', `/installations/${objectId}`, { as: 'master' })).json.deviceToken).toBe(
      `tok-${id}`,
    );
    const add = await t.request('PUT', `/installations/${objectId}`, {
      headers: header(id),
      body: { brandNew: 1 },
    });
    expect(add.json).toEqual({
      code: 119,
      error: 'Permission denied for action addField on class _Installation.',
    });
    // find and delete stay master-only even though the CLP now says public.
    expect((await t.request('GET', '/installations', {})).status).toBe(403);
  });
});

describe('installation defaults', () => {
  it('hides deviceToken from non-master callers by default, even the device itself', async () => {
    const t = await startService();
    try {
      const id = '3f6c1a2e-0000-4000-8000-00000000abcd';
      const created = await t.request('POST', '/installations', {
        headers: { 'X-Backend-Installation-Id': id },
        body: { deviceType: 'ios', deviceToken: 'secret-push-token' },
      });
      expect(created.status).toBe(201);
      expect(created.text).not.toContain('secret-push-token');
      const anyone = await t.request('GET', `/installations/${created.json.objectId}`);
      expect(anyone.status).toBe(200);
      expect(anyone.json).not.toHaveProperty('deviceToken');
      const master = await t.request('GET', `/installations/${created.json.objectId}`, { as: 'master' });
      expect(master.json.deviceToken).toBe('secret-push-token');
    } finally {
      await t.close();
    }
  });
});

describe('_Installation probed in a world of docs (buildDocWorld)', () => {
  let t: TestService;
  let alice: TestUser;
  beforeAll(async () => {
    ({ t, alice } = await buildDocWorld());
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('_Installation against another device', () => {
    const header = (id: string) => ({ 'X-Backend-Installation-Id': id });
    it('an update from another device answers 101 whatever it writes (no existence or value oracle)', async () => {
      const reg = await t.request('POST', '/installations', {
        headers: header('victim-installation-1'),
        body: { deviceType: 'ios', deviceToken: 'victim-token' },
      });
      expect(reg.status, reg.text).toBe(201);
      const id = reg.json.objectId as string;
      const missing = await t.request('PUT', '/installations/nope123456', {
        headers: header('attacker-installation'),
        body: { deviceType: 'android' },
      });
      for (const body of [
        { deviceType: 'android' },
        { deviceType: 'ios' },
        { installationId: 'wrong-guess' },
        { installationId: 'victim-installation-1' },
      ]) {
        const r = await t.request('PUT', `/installations/${id}`, {
          headers: header('attacker-installation'),
          body,
        });
        expect(r.json, JSON.stringify(body)).toEqual(missing.json);
      }
      const find = await t.request('GET', '/installations', { headers: header('victim-installation-1') });
      expect(find.status).toBe(403);
      expect(find.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
      const sub = await t.request('GET', '/classes/Doc', {
        sessionToken: alice.token,
        query: {
          where: {
            title: { $select: { query: { className: '_Installation', where: {} }, key: 'deviceToken' } },
          },
        },
      });
      expect(sub.status).toBe(403);
      expect(sub.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
      const del = await t.request('DELETE', `/installations/${id}`, {
        headers: header('victim-installation-1'),
      });
      expect(del.status).toBe(403);
      expect(del.json).toEqual({ code: 119, error: 'unauthorized: master key is required' });
    });

    it('protectedFields on _Installation apply to get and include', async () => {
      await setClp(t, '_Installation', {
        get: { '*': true },
        count: { '*': true },
        create: { '*': true },
        update: { '*': true },
        addField: {},
        protectedFields: { '*': ['deviceToken'] },
      });
      const reg = await t.request('POST', '/installations', {
        headers: header('victim-installation-2'),
        body: { deviceType: 'ios', deviceToken: 'victim-token-2' },
      });
      const id = reg.json.objectId as string;
      const get = await t.request('GET', `/installations/${id}`, {});
      expect(get.status).toBe(200);
      expect(text(get)).not.toContain('victim-token-2');
      const cnt = await t.request('GET', '/installations', {
        query: { where: { deviceToken: 'victim-token-2' }, count: 1, limit: 0 },
      });
      expect(cnt.status).toBe(400);
      expect(cnt.json).toEqual({
        code: 119,
        error: 'This user is not allowed to query deviceToken on class _Installation.',
      });
    });
  });
});
