import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * Issue 27: a user's password changes only through its own route (PUT .../users/:id/password),
 * audited as "password changed" without any value. The generic write routes (row update, bulk
 * update, user update) refuse a credential field of _User or _Session, whatever the console sends.
 */

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const A = '/bff/apps/test-app';
let dora = { id: '', token: '' };
const PASSWORD_REFUSAL =
  'password: a user\'s password changes only through "Set password" (Security → Users), which asks for a confirmation.';

const logIn = async (password: string) =>
  (await t.service.request('POST', '/login', { body: { username: 'dora', password } })).status;
/** 200 while the session works, else the protocol code of the refusal. */
const sessionStatus = async (token: string) => {
  const res = await t.service.request('GET', '/users/me', { sessionToken: token });
  return res.status === 200 ? 200 : res.json.code;
};
const auditOf = (action: string) => t.bff.ctx.audit.list({ app: 'test-app', action, limit: 1000 });

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  const res = await t.service.request('POST', '/users', { body: { username: 'dora', password: 'old pw 1' } });
  expect(res.status).toBe(201);
  dora = { id: res.json.objectId, token: res.json.sessionToken };
});
afterAll(async () => {
  await t?.close();
});

describe('the generic write routes refuse credentials', () => {
  it.each([
    ['PUT users/:id', 'PUT', () => `${A}/users/${dora.id}`, { password: 'sneaky 1', nickname: 'x' }],
    ['PUT classes/_User/:id', 'PUT', () => `${A}/classes/_User/${dora.id}`, { password: 'sneaky 2' }],
    [
      'bulk update of _User',
      'POST',
      () => `${A}/classes/_User/bulk/update`,
      { objectIds: ['placeholder'], field: 'password', value: 'sneaky 3' },
    ],
  ])('%s: 400, code 105, pointing to the control; nothing changes', async (_, method, path, body) => {
    const payload =
      'objectIds' in body ? { ...body, objectIds: [dora.id] } : (body as Record<string, unknown>);
    const updatesBefore = auditOf('row.update').length + auditOf('user.update').length;
    const res = await admin(path(), { method: method as 'PUT', body: payload });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 105, error: PASSWORD_REFUSAL });
    expect(await logIn('old pw 1')).toBe(200);
    expect(await sessionStatus(dora.token)).toBe(200);
    expect(
      (await t.service.request('GET', `/users/${dora.id}`, { as: 'master' })).json.nickname,
    ).toBeUndefined();
    expect(auditOf('row.update').length + auditOf('user.update').length).toBe(updatesBefore);
  });

  it('refuses authData and sessionToken of a user, and sessionToken of a session, by name', async () => {
    const authData = await admin.put(`${A}/classes/_User/${dora.id}`, { authData: { x: {} } });
    expect(authData.status).toBe(400);
    expect(authData.json).toEqual({
      code: 105,
      error: 'authData: credentials are not edited in the console.',
    });
    const token = await admin.put(`${A}/users/${dora.id}`, { sessionToken: 'r:forged' });
    expect(token.json).toEqual({
      code: 105,
      error: 'sessionToken: credentials are not edited in the console.',
    });
    const session = (
      await t.service.request('GET', `/classes/_Session?where=${encodeURIComponent(JSON.stringify({}))}`, {
        as: 'master',
      })
    ).json.results[0];
    const onSession = await admin.put(`${A}/classes/_Session/${session.objectId}`, {
      sessionToken: 'r:forged',
    });
    expect(onSession.json).toEqual({
      code: 105,
      error: 'sessionToken: credentials are not edited in the console.',
    });
  });

  it('leaves other classes alone: a field named password on an app class is a plain field', async () => {
    expect(
      (await admin.post(`${A}/schemas`, { className: 'Vault', fields: { password: { type: 'String' } } }))
        .status,
    ).toBe(201);
    const created = await admin.post(`${A}/classes/Vault`, { password: 'plain' });
    expect(created.status).toBe(201);
    const res = await admin.put(`${A}/classes/Vault/${created.json.objectId}`, { password: 'plainer' });
    expect(res.status).toBe(200);
  });
});

describe('PUT .../users/:objectId/password', () => {
  it('sets the password, ends the sessions, and audits "password changed" without a value', async () => {
    const res = await admin.put(`${A}/users/${dora.id}/password`, { password: 'new pw 2' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(['updatedAt']);
    expect(await logIn('new pw 2')).toBe(200);
    expect(await logIn('old pw 1')).toBe(404);
    expect(await sessionStatus(dora.token)).toBe(209);
    const [entry] = auditOf('user.password');
    expect(entry).toMatchObject({
      user: 'admin',
      action: 'user.password',
      target: `_User/${dora.id}`,
      before: null,
      after: { change: 'password changed' },
    });
    expect(JSON.stringify(entry)).not.toContain('new pw');
    expect(t.logs.join('\n')).not.toContain('new pw');
  });

  it('refuses an empty password, another field, an unknown user and a read-only console user', async () => {
    const empty = await admin.put(`${A}/users/${dora.id}/password`, { password: '' });
    expect(empty.status).toBe(400);
    expect(empty.json).toEqual({
      code: 107,
      error: 'Invalid password: password: Too small: expected string to have >=1 characters',
    });
    const extra = await admin.put(`${A}/users/${dora.id}/password`, { password: 'x', email: 'a@b.c' });
    expect(extra.status).toBe(400);
    expect(extra.json.code).toBe(107);
    const unknown = await admin.put(`${A}/users/nobody123/password`, { password: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe(101);
    const ro = await viewer.put(`${A}/users/${dora.id}/password`, { password: 'viewer pw' });
    expect(ro.status).toBe(403);
    expect(ro.json.code).toBe(119);
    expect(await logIn('new pw 2')).toBe(200);
    expect(auditOf('user.password')).toHaveLength(1);
  });
});
