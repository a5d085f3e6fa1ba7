import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, type TestUser } from '../helpers/access-world.ts';
import { startService, type TestService } from '../helpers/service.ts';

/**
 * `_User`'s own-account rule (a user updates and deletes only their own row: 206 `Insufficient auth
 * to <op> user <id>.`) and the account-only writes of `_User` and `_Session` (no other writer but the
 * account rules, 119) are rules of the class-layer decider: enforcement (REST, batch, cloud code),
 * the Security API's explanation, its rules and the impact preview all answer from it.
 */

const CLOUD = fileURLToPath(new URL('../fixtures/account-writes-cloud.ts', import.meta.url));

let t: TestService;
let ann: TestUser;
let bob: TestUser;
let carol: TestUser;

const insufficient = (op: 'update' | 'delete', id: string) => ({
  code: 206,
  error: `Insufficient auth to ${op} user ${id}.`,
});

beforeAll(async () => {
  t = await startService({ cloud: CLOUD });
  ann = await createUser(t, 'ann');
  bob = await createUser(t, 'bob');
  carol = await createUser(t, 'carol');
  // bob's row: anyone may write it as far as its ACL goes; only the own-account rule keeps others out.
  const open = await t.request('PUT', `/users/${bob.id}`, {
    as: 'master',
    body: { ACL: { '*': { read: true, write: true } } },
  });
  expect(open.status, open.text).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

const explain = (body: Record<string, unknown>) =>
  t.request('POST', '/security/explain', { as: 'master', body });

describe('enforcement: the same codes and texts on every path', () => {
  it('REST and batch: another user and an anonymous caller get 206; the ACL is not what refuses', async () => {
    const asAnn = await t.request('PUT', `/users/${bob.id}`, {
      sessionToken: ann.token,
      body: { nick: 'x' },
    });
    expect([asAnn.status, asAnn.json]).toEqual([400, insufficient('update', bob.id)]);
    const viaClasses = await t.request('PUT', `/classes/_User/${bob.id}`, {
      sessionToken: ann.token,
      body: { nick: 'x' },
    });
    expect([viaClasses.status, viaClasses.json]).toEqual([400, insufficient('update', bob.id)]);
    const anonymous = await t.request('DELETE', `/users/${bob.id}`);
    expect([anonymous.status, anonymous.json]).toEqual([400, insufficient('delete', bob.id)]);
    const batch = await t.request('POST', '/batch', {
      sessionToken: ann.token,
      body: {
        requests: [
          { method: 'PUT', path: `/users/${bob.id}`, body: { nick: 'x' } },
          { method: 'DELETE', path: `/classes/_User/${bob.id}` },
          { method: 'PUT', path: `/users/${ann.id}`, body: { nick: 'mine' } },
        ],
      },
    });
    expect(batch.json).toEqual([
      { error: insufficient('update', bob.id) },
      { error: insufficient('delete', bob.id) },
      { success: { updatedAt: expect.any(String) } },
    ]);
    const stored = await t.request('GET', `/users/${bob.id}`, { as: 'master' });
    expect(stored.json.nick).toBeUndefined();
  });

  it('cloud code as the caller cannot write _User or _Session rows, even its own', async () => {
    const refused = (op: string, className: string) => ({
      code: 141,
      error: `Permission denied for action ${op} on class ${className}.`,
    });
    const call = (name: string, params: Record<string, unknown>) =>
      t.request('POST', `/functions/${name}`, { sessionToken: carol.token, body: params });
    const own = await call('renameUser', { id: carol.id, nick: 'c' });
    expect([own.status, own.json]).toEqual([400, refused('update', '_User')]);
    const other = await call('deleteUser', { id: bob.id });
    expect([other.status, other.json]).toEqual([400, refused('delete', '_User')]);
    const made = await call('makeUser', { username: 'from-cloud' });
    expect([made.status, made.json]).toEqual([400, refused('create', '_User')]);
    const session = await call('deleteSession', { id: 'AAAAAAAAAA' });
    expect([session.status, session.json]).toEqual([400, refused('delete', '_Session')]);
  });
});

describe('the explanation follows the own-account rule', () => {
  it("another user's row: refused with 206 by the built-in rule, although the CLP and the ACL allow", async () => {
    const res = await explain({
      operation: 'update',
      className: '_User',
      objectId: bob.id,
      viewpoint: { kind: 'user', userId: ann.id },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({
      allowed: false,
      decidedBy: 'system',
      ...insufficientMessage('update', bob.id),
      layers: [
        {
          layer: 'clp',
          allowed: false,
          decidedBy: 'system',
          rule: 'system.ownAccount',
          reason: 'only the user whose row it is (signed in with their session) may update a _User row',
        },
        { layer: 'acl', skipped: true },
        { layer: 'protectedFields', skipped: true },
      ],
      toAllow: ['Only the user whose row it is, signed in, or the master key may update this _User row.'],
    });
  });

  it('anonymous: refused with 206 for a delete', async () => {
    const res = await explain({
      operation: 'delete',
      className: '_User',
      objectId: bob.id,
      viewpoint: { kind: 'anonymous' },
    });
    expect(res.json).toMatchObject({
      allowed: false,
      decidedBy: 'system',
      ...insufficientMessage('delete', bob.id),
    });
  });

  it('the own row: allowed by the rule together with the CLP, then the ACL', async () => {
    const res = await explain({
      operation: 'update',
      className: '_User',
      objectId: ann.id,
      viewpoint: { kind: 'user', userId: ann.id },
    });
    expect(res.json).toMatchObject({
      allowed: true,
      decidedBy: 'acl',
      layers: [
        {
          layer: 'clp',
          allowed: true,
          decidedBy: 'system',
          rule: 'system.ownAccount',
          entry: '*',
          reason:
            'only the user whose row it is (signed in with their session) may update a _User row; update on _User is public',
        },
        { layer: 'acl', allowed: true, rule: 'acl.grant', entry: ann.id },
        { layer: 'protectedFields', skipped: true },
      ],
    });
  });
});

function insufficientMessage(op: 'update' | 'delete', id: string) {
  const { code, error } = insufficient(op, id);
  return { code, message: error };
}

describe('the rules view and the impact preview follow it', () => {
  it('_User update and delete: refused to anonymous callers, allowed to a user on their own row only', async () => {
    const res = await t.request('POST', '/security/rules', { as: 'master', body: { className: '_User' } });
    expect(res.status, res.text).toBe(200);
    const op = (name: string) => res.json.operations.find((o: { operation: string }) => o.operation === name);
    for (const name of ['update', 'delete'] as const) {
      const rule = `only the user whose row it is (signed in with their session) may ${name} a _User row`;
      expect(op(name)).toEqual({
        operation: name,
        fixed: false,
        builtIn: { rule: 'system.ownAccount', reason: rule },
        anonymous: {
          allowed: false,
          decidedBy: 'system',
          rule: 'system.ownAccount',
          reason: rule,
          code: 206,
          message: `Insufficient auth to ${name} user <id>.`,
        },
        signedIn: {
          allowed: true,
          decidedBy: 'system',
          rule: 'system.ownAccount',
          reason: `${rule}; ${name} on _User is public`,
          onSomeRows: true,
        },
      });
    }
    // Sign-up and reads follow the CLP alone.
    for (const name of ['find', 'get', 'count', 'create', 'addField']) {
      expect(op(name).builtIn, name).toBeUndefined();
      expect(op(name).anonymous, name).toMatchObject({ allowed: true, rule: 'clp.public' });
    }
  });

  it('a user row opened to public write: no one but its user gains update or delete', async () => {
    const res = await t.request('POST', '/security/impact', {
      as: 'master',
      body: {
        className: '_User',
        change: { kind: 'acl', objectIds: [carol.id], ACL: { '*': { read: true, write: true } } },
      },
    });
    expect(res.status, res.text).toBe(200);
    for (const name of ['update', 'delete']) {
      const op = res.json.operations.find((o: { operation: string }) => o.operation === name);
      expect(op, name).toMatchObject({ gain: 0, lose: 0, anonymous: 'same' });
    }
    expect(res.json.anonymous).toEqual({ read: 'same', write: 'same' });
    expect(res.json.write).toMatchObject({ gain: 0, lose: 0 });
  });

  it('closing update on _User: the users lose it on their own rows, anonymous callers had nothing to lose', async () => {
    const schema = await t.request('GET', '/schemas/_User', { as: 'master' });
    const res = await t.request('POST', '/security/impact', {
      as: 'master',
      body: {
        className: '_User',
        change: { kind: 'clp', classLevelPermissions: { ...schema.json.classLevelPermissions, update: {} } },
      },
    });
    expect(res.status, res.text).toBe(200);
    const update = res.json.operations.find((o: { operation: string }) => o.operation === 'update');
    expect(update).toMatchObject({ gain: 0, lose: 3, anonymous: 'same' });
    expect(res.json.anonymous).toEqual({ read: 'same', write: 'same' });
  });
});
