import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The Security section's people routes against a real service: the role hierarchy and effective
 * members (roles.ts), the password reset mail (users.ts), the user search with its anonymous and
 * MFA markers and the installation filter (people.ts).
 */

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const A = '/bff/apps/test-app';
const ids: Record<string, string> = {};
const CYCLE = 'A role cannot hold itself, directly or through other roles (cycle in the role graph).';

const master = (method: string, p: string, body?: unknown) =>
  t.service.request(method, p, { as: 'master', body });

async function signUp(username: string, email?: string): Promise<{ id: string; token: string }> {
  const res = await t.service.request('POST', '/users', {
    body: { username, password: `${username} pw`, ...(email ? { email } : {}) },
  });
  expect(res.status).toBe(201);
  return { id: res.json.objectId, token: res.json.sessionToken };
}

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  ids.ann = (await signUp('ann', 'ann@example.com')).id;
  ids.bob = (await signUp('bob', 'bob@corp.test')).id;
  ids.noMail = (await signUp('nomail')).id;
  for (const name of ['Viewers', 'Editors', 'Admins', 'Loners']) {
    const res = await admin.post(`${A}/roles`, { name });
    expect(res.status).toBe(201);
    ids[name] = res.json.objectId;
  }
  // Editors inherit capabilities from Viewers; Admins inherit capabilities from Editors.
  expect((await admin.post(`${A}/roles/${ids.Viewers}/roles`, { roleIds: [ids.Editors] })).status).toBe(200);
  expect((await admin.post(`${A}/roles/${ids.Editors}/roles`, { roleIds: [ids.Admins] })).status).toBe(200);
  expect((await admin.post(`${A}/roles/${ids.Admins}/users`, { userIds: [ids.ann] })).status).toBe(200);
  expect((await admin.post(`${A}/roles/${ids.Viewers}/users`, { userIds: [ids.bob, ids.ann] })).status).toBe(
    200,
  );
});

afterAll(async () => {
  await t?.close();
});

describe('role hierarchy', () => {
  it('lists every role with its direct member count and edges in the direction capabilities flow', async () => {
    const res = await viewer.get(`${A}/role-hierarchy`);
    expect(res.status).toBe(200);
    expect(res.json.roles).toEqual([
      { objectId: ids.Admins, name: 'Admins', users: 1 },
      { objectId: ids.Editors, name: 'Editors', users: 0 },
      { objectId: ids.Loners, name: 'Loners', users: 0 },
      { objectId: ids.Viewers, name: 'Viewers', users: 2 },
    ]);
    expect(res.json.edges).toEqual(
      expect.arrayContaining([
        { from: ids.Viewers, to: ids.Editors },
        { from: ids.Editors, to: ids.Admins },
      ]),
    );
    expect(res.json.edges).toHaveLength(2);
    expect(res.json.truncated).toBe(false);
  });

  it('a cycle is refused with the service code and text', async () => {
    const res = await admin.post(`${A}/roles/${ids.Admins}/roles`, { roleIds: [ids.Viewers] });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 139, error: CYCLE });
    expect((await admin.get(`${A}/role-hierarchy`)).json.edges).toHaveLength(2);
  });
});

describe('effective members', () => {
  it('collects members through the chain, each with the shortest chain of role names', async () => {
    const res = await viewer.get(`${A}/roles/${ids.Viewers}/effective-members`);
    expect(res.status).toBe(200);
    expect(res.json.role).toMatchObject({ objectId: ids.Viewers, name: 'Viewers' });
    const byName = Object.fromEntries(res.json.results.map((m: any) => [m.user.username, m.via]));
    // ann is a direct member too: the direct (shortest) chain wins.
    expect(byName).toEqual({ ann: ['Viewers'], bob: ['Viewers'] });
    expect(res.json.truncated).toBe(false);

    const editors = await viewer.get(`${A}/roles/${ids.Editors}/effective-members`);
    expect(editors.json.results).toEqual([
      { user: expect.objectContaining({ objectId: ids.ann, username: 'ann' }), via: ['Admins', 'Editors'] },
    ]);
  });

  it('follows a longer chain and drops members when a link is removed', async () => {
    expect((await admin.delete(`${A}/roles/${ids.Viewers}/users/${ids.ann}`)).status).toBe(200);
    const res = await viewer.get(`${A}/roles/${ids.Viewers}/effective-members`);
    const byName = Object.fromEntries(res.json.results.map((m: any) => [m.user.username, m.via]));
    expect(byName).toEqual({ ann: ['Admins', 'Editors', 'Viewers'], bob: ['Viewers'] });

    expect((await admin.delete(`${A}/roles/${ids.Editors}/roles/${ids.Admins}`)).status).toBe(200);
    const cut = await viewer.get(`${A}/roles/${ids.Viewers}/effective-members`);
    expect(cut.json.results.map((m: any) => m.user.username)).toEqual(['bob']);
    expect((await admin.post(`${A}/roles/${ids.Editors}/roles`, { roleIds: [ids.Admins] })).status).toBe(200);
  });

  it('a role without members has none; unknown and malformed ids are refused', async () => {
    expect((await viewer.get(`${A}/roles/${ids.Loners}/effective-members`)).json.results).toEqual([]);
    const missing = await viewer.get(`${A}/roles/nosuchrole/effective-members`);
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ code: 101, error: 'Object not found.' });
    const bad = await viewer.get(`${A}/roles/bad%20id/effective-members`);
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ code: 107, error: 'Invalid object id: must be an object id' });
  });
});

describe('user search', () => {
  it('finds users by username or email, literally, and marks anonymous users', async () => {
    const anon = await t.service.request('POST', '/users', {
      body: { authData: { anonymous: { id: '1c9a3f2e-8d7b-4f0e-9a1b-2c3d4e5f6a7b' } } },
    });
    expect(anon.status).toBe(201);
    ids.anon = anon.json.objectId;

    const all = await viewer.get(`${A}/people/users`);
    expect(all.status).toBe(200);
    expect(all.json.count).toBe(4);
    const anonRow = all.json.results.find((u: any) => u.objectId === ids.anon);
    expect(anonRow).toMatchObject({ anonymous: true, mfa: false });
    expect(anonRow.authData).toBeUndefined();
    expect(all.json.results.find((u: any) => u.username === 'ann')).toMatchObject({
      anonymous: false,
      mfa: false,
      email: 'ann@example.com',
    });
    expect(all.text).not.toContain('1c9a3f2e-8d7b-4f0e-9a1b-2c3d4e5f6a7b');

    const byName = await viewer.get(`${A}/people/users?search=AN`);
    expect(byName.json.results.map((u: any) => u.username)).toEqual(['ann']);
    const byMail = await viewer.get(`${A}/people/users?search=${encodeURIComponent('@corp.test')}`);
    expect(byMail.json.results.map((u: any) => u.username)).toEqual(['bob']);
    // A dot is a dot, not "any character".
    expect((await viewer.get(`${A}/people/users?search=ann.example`)).json.results).toEqual([]);
    expect((await viewer.get(`${A}/people/users?search=${encodeURIComponent('(')}`)).json.results).toEqual(
      [],
    );
  });

  // Needs the service to report an enrolled second factor to master reads of _User as
  // authData.mfa = {status: 'enabled'} (today only the user's own GET /users/me does).
  it('marks users with an enrolled second factor', async () => {
    const { Secret, TOTP } = await import('otpauth');
    const secret = 'JBSWY3DPEHPK3PXPJBSWY3DPJBSWY3DP';
    const dave = await signUp('dave', 'dave@example.com');
    const token = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 }).generate();
    const enrol = await t.service.request('PUT', `/users/${dave.id}`, {
      sessionToken: dave.token,
      body: { authData: { mfa: { secret, token } } },
    });
    expect(enrol.status).toBe(200);
    const res = await viewer.get(`${A}/people/users?search=dave`);
    expect(res.json.results).toEqual([expect.objectContaining({ username: 'dave', mfa: true })]);
    expect(res.text).not.toContain(secret);
  });

  it('refuses a bad page', async () => {
    const res = await viewer.get(`${A}/people/users?limit=lots`);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 107,
      error: 'Invalid users query: limit: must be a non-negative integer',
    });
    const extra = await viewer.get(`${A}/people/users?where=%7B%7D`);
    expect(extra.status).toBe(400);
    expect(extra.json.code).toBe(107);
  });
});

describe('password reset mail', () => {
  it('asks the service to mail the user a reset link, and audits it', async () => {
    const res = await admin.post(`${A}/users/${ids.bob}/password-reset`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ sentTo: 'bob@corp.test' });
    await expect
      .poll(async () => (await master('GET', '/devMailbox')).json.results.map((m: any) => m.to))
      .toContain('bob@corp.test');
    const mail = (await master('GET', '/devMailbox')).json.results.find((m: any) => m.to === 'bob@corp.test');
    expect(mail.subject).toBe('Password reset for test-app');
    const entry = t.bff.ctx.audit.list({ action: 'user.passwordReset' })[0];
    expect(entry).toMatchObject({
      user: 'admin',
      target: `_User/${ids.bob}`,
      after: { email: 'bob@corp.test' },
    });
  });

  it('refuses a user without an email, an unknown user, and a read-only console user', async () => {
    const noMail = await admin.post(`${A}/users/${ids.noMail}/password-reset`);
    expect(noMail.status).toBe(400);
    expect(noMail.json).toEqual({
      code: 204,
      error: 'User nomail has no email address to send a reset mail to.',
    });
    const missing = await admin.post(`${A}/users/nosuchuser/password-reset`);
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ code: 101, error: 'Object not found.' });
    const ro = await viewer.post(`${A}/users/${ids.ann}/password-reset`);
    expect(ro.status).toBe(403);
    expect(ro.json).toEqual({ code: 119, error: 'Read-only console users cannot change anything.' });
    expect(t.bff.ctx.audit.list({ action: 'user.passwordReset' })).toHaveLength(1);
  });
});

describe('sessions', () => {
  it('lists sessions with their user, never the token', async () => {
    const carol = await signUp('carol', 'carol@example.com');
    const res = await viewer.get(`${A}/sessions?include=user&user=${carol.id}`);
    expect(res.status).toBe(200);
    expect(res.json.results).toHaveLength(1);
    expect(res.json.results[0]).toMatchObject({
      user: { objectId: carol.id, username: 'carol' },
      sessionToken: '[FILTERED]',
      expiresAt: { __type: 'Date' },
    });
    expect(res.text).not.toContain(carol.token);
  });
});

describe('installations', () => {
  beforeAll(async () => {
    const rows = [
      { installationId: 'inst-ios-1', deviceType: 'ios', channels: ['news', 'sports'], user: ids.ann },
      { installationId: 'inst-android-1', deviceType: 'android', channels: ['news'], user: ids.bob },
      { installationId: 'inst-ios-2', deviceType: 'ios', channels: ['weather'] },
    ];
    for (const r of rows) {
      const { user, ...fields } = r;
      const res = await master('POST', '/installations', {
        ...fields,
        deviceToken: `device-token-${r.installationId}-0123456789`,
        ...(user ? { user: { __type: 'Pointer', className: '_User', objectId: user } } : {}),
      });
      expect(res.status).toBe(201);
    }
  });

  const ids_ = (res: { json: any }) => res.json.results.map((r: any) => r.installationId).sort();

  it('lists and filters by device type, channel, user and installation id, tokens masked', async () => {
    const all = await viewer.get(`${A}/people/installations`);
    expect(all.status).toBe(200);
    expect(all.json.count).toBe(3);
    expect(all.text).not.toContain('device-token-inst-ios-1-0123456789');
    const ann = all.json.results.find((r: any) => r.installationId === 'inst-ios-1');
    expect(ann.deviceToken).toBe('device-t…');
    expect(ann.user).toEqual({ objectId: ids.ann, username: 'ann' });

    expect(ids_(await viewer.get(`${A}/people/installations?deviceType=ios`))).toEqual([
      'inst-ios-1',
      'inst-ios-2',
    ]);
    expect(ids_(await viewer.get(`${A}/people/installations?channel=news`))).toEqual([
      'inst-android-1',
      'inst-ios-1',
    ]);
    expect(ids_(await viewer.get(`${A}/people/installations?user=${ids.bob}`))).toEqual(['inst-android-1']);
    expect(ids_(await viewer.get(`${A}/people/installations?username=BOB`))).toEqual(['inst-android-1']);
    const nobody = await viewer.get(`${A}/people/installations?username=nobody`);
    expect(nobody.json).toEqual({ results: [], count: 0 });
    expect(ids_(await viewer.get(`${A}/people/installations?deviceType=ios&channel=news`))).toEqual([
      'inst-ios-1',
    ]);
    expect(ids_(await viewer.get(`${A}/people/installations?installationId=inst-ios-2`))).toEqual([
      'inst-ios-2',
    ]);
  });

  it('refuses a malformed user id', async () => {
    const res = await viewer.get(`${A}/people/installations?user=not%20an%20id`);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 107, error: 'Invalid installations query: user: must be an object id' });
  });
});
