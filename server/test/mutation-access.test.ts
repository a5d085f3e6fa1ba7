import { describe, expect, it } from 'vitest';
import { aclCondition, decideAcl } from '../src/access/acl.ts';
import {
  decideClass,
  decideClp,
  decideMasterSurface,
  MATCH_NOTHING,
  pointsAtUser,
} from '../src/access/class.ts';
import { explainProtected, protectedView } from '../src/access/protected.ts';
import { allow, deny, MASTER_ONLY_RULE } from '../src/access/verdict.ts';
import { anonymous, MASTER, makeCaller } from '../src/kernel/caller.ts';
import type { Row } from '../src/kernel/records.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';

/**
 * The access deciders as data, with exact verdicts: which layer and rule decided, the entry and
 * role chain that matched, the protocol error of a denial, the explanation, and the row condition
 * of an allowance. Found missing by mutation testing (`npm run test:mutation`): the integration
 * tests check who gets in, not what the verdict says about why.
 */

const alice = makeCaller({ user: { objectId: 'uA' } });
const editor = makeCaller({
  user: { objectId: 'uE' },
  roles: [
    { name: 'Staff', via: null },
    { name: 'Editors', via: 'Staff' },
  ],
});
const anon = anonymous();
const device = anonymous('inst-1');

const userPointer = (objectId: string) => ({ __type: 'Pointer', className: '_User', objectId });
/** A class schema; without permissions (`undefined`, as an old stored schema may be) to check the fallback. */
const schemaOf = (
  className: string,
  classLevelPermissions?: ClassSchema['classLevelPermissions'],
): Pick<ClassSchema, 'className' | 'classLevelPermissions'> => ({
  className,
  classLevelPermissions: classLevelPermissions as ClassSchema['classLevelPermissions'],
});

const MASTER_REQUIRED = { code: 119, message: 'unauthorized: master key is required' };

describe('verdicts', () => {
  it('allow and deny build exactly the documented shape', () => {
    expect(allow('acl', 'acl.grant', 'why', { entry: '*' })).toStrictEqual({
      allowed: true,
      layer: 'acl',
      rule: 'acl.grant',
      reason: 'why',
      entry: '*',
    });
    expect(allow('clp', 'clp.public', 'why')).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.public',
      reason: 'why',
    });
    expect(deny('clp', 'clp.none', 119, 'no', 'why')).toStrictEqual({
      allowed: false,
      layer: 'clp',
      rule: 'clp.none',
      reason: 'why',
      code: 119,
      message: 'no',
    });
    expect(MASTER_ONLY_RULE).toBe('system.masterOnly');
  });
});

describe('the ACL decider', () => {
  it('the master key bypasses ACLs and has no row condition', () => {
    expect(decideAcl({}, MASTER, 'write')).toStrictEqual({
      allowed: true,
      layer: 'master',
      rule: 'master',
      reason: 'the master key bypasses ACLs',
    });
    expect(aclCondition(MASTER, 'read')).toBeUndefined();
  });

  it('compiles the caller principals and the access into the row condition', () => {
    expect(aclCondition(editor, 'write')).toStrictEqual({
      type: 'acl',
      access: 'write',
      principals: ['*', 'uE', 'role:Editors', 'role:Staff'],
    });
    expect(aclCondition(anon, 'read')).toStrictEqual({ type: 'acl', access: 'read', principals: ['*'] });
  });

  it('names who the ACL grants: the public, a user, a role with its chain', () => {
    expect(decideAcl(null, alice, 'read')).toStrictEqual({
      allowed: true,
      layer: 'acl',
      rule: 'acl.noAcl',
      reason: 'the row has no ACL, so it is public',
    });
    expect(decideAcl({ '*': { read: true } }, alice, 'read')).toStrictEqual({
      allowed: true,
      layer: 'acl',
      rule: 'acl.grant',
      reason: "the row's ACL grants read to the public",
      entry: '*',
    });
    expect(decideAcl({ uA: { write: true } }, alice, 'write')).toStrictEqual({
      allowed: true,
      layer: 'acl',
      rule: 'acl.grant',
      reason: "the row's ACL grants write to user uA",
      entry: 'uA',
    });
    // The stored form (lists per access) decides the same way.
    expect(decideAcl({ read: ['role:Editors'], write: [] }, editor, 'read')).toStrictEqual({
      allowed: true,
      layer: 'acl',
      rule: 'acl.grant',
      reason: "the row's ACL grants read to members of Editors",
      entry: 'role:Editors',
      roleChain: ['Staff', 'Editors'],
    });
  });

  it('a denial answers 101 and lists the principals tried', () => {
    expect(decideAcl({ read: ['role:Editors'], write: [] }, editor, 'write')).toStrictEqual({
      allowed: false,
      layer: 'acl',
      rule: 'acl.none',
      reason: "no entry of the row's ACL grants write to the caller (*, uE, role:Editors, role:Staff)",
      code: 101,
      message: 'Object not found.',
    });
  });
});

describe('grants to a user with a real-length object id', () => {
  // Object ids are 10 characters: longer than the `role:` prefix, so a mix-up of the two shows.
  const user = makeCaller({ user: { objectId: 'Xy7Qw2Lm9P' } });

  it('names the user and carries no role chain', () => {
    expect(decideAcl({ Xy7Qw2Lm9P: { read: true } }, user, 'read')).toStrictEqual({
      allowed: true,
      layer: 'acl',
      rule: 'acl.grant',
      reason: "the row's ACL grants read to user Xy7Qw2Lm9P",
      entry: 'Xy7Qw2Lm9P',
    });
    expect(decideClp(schemaOf('K', { get: { Xy7Qw2Lm9P: true } }), 'get', user)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.principal',
      reason: 'get on K is granted to Xy7Qw2Lm9P',
      entry: 'Xy7Qw2Lm9P',
    });
    expect(decideClp(schemaOf('K', { get: {} }), 'get', MASTER)).toStrictEqual({
      allowed: true,
      layer: 'master',
      rule: 'master',
      reason: 'the master key bypasses class-level permissions',
    });
  });
});

describe('the class decider: built-in classes', () => {
  it('the master key bypasses everything, master-only classes and _Join tables refuse everyone else', () => {
    expect(
      decideClass({ className: '_JobStatus', schema: undefined, op: 'find', caller: MASTER }),
    ).toStrictEqual({
      allowed: true,
      layer: 'master',
      rule: 'master',
      reason: 'the master key bypasses class-level permissions',
    });
    expect(
      decideClass({ className: '_JobStatus', schema: undefined, op: 'get', caller: alice }),
    ).toStrictEqual({
      allowed: false,
      layer: 'system',
      rule: 'system.masterOnly',
      reason: '_JobStatus is master-only',
      ...MASTER_REQUIRED,
    });
    const join = decideClass({
      className: '_Join:roles:_Role',
      schema: undefined,
      op: 'find',
      caller: alice,
    });
    expect(join).toMatchObject({
      allowed: false,
      rule: 'system.masterOnly',
      reason: '_Join:roles:_Role is master-only',
    });
    // Only the `_Join:` prefix: a class merely containing it is an ordinary class.
    expect(
      decideClass({ className: 'My_Join:x', schema: undefined, op: 'find', caller: alice }),
    ).toMatchObject({
      allowed: true,
      rule: 'clp.noClass',
    });
  });

  it('_Session: never reached from other queries, written only with the master key', () => {
    expect(
      decideClass({ className: '_Session', schema: undefined, op: 'find', caller: alice, reached: true }),
    ).toStrictEqual({
      allowed: false,
      layer: 'system',
      rule: 'system.session',
      reason: 'sessions are not reachable from other queries',
      code: 119,
      message: 'Permission denied for action find on class _Session.',
    });
    for (const op of ['create', 'update', 'addField'] as const) {
      expect(decideClass({ className: '_Session', schema: undefined, op, caller: alice })).toStrictEqual({
        allowed: false,
        layer: 'system',
        rule: 'system.masterOnly',
        reason: 'sessions are created by sign-up and login; only the master key writes them',
        ...MASTER_REQUIRED,
      });
    }
  });

  it('_Session: an anonymous caller needs a session token (209)', () => {
    expect(decideClass({ className: '_Session', schema: undefined, op: 'find', caller: anon })).toStrictEqual(
      {
        allowed: false,
        layer: 'system',
        rule: 'system.session',
        reason: 'sessions are only visible to their user',
        code: 209,
        message: 'Session token required: send X-Backend-Session-Token.',
      },
    );
  });

  it('_Session: a user reads and deletes only rows whose user is them, within the CLP', () => {
    const own = { type: 'compare', path: ['user'], op: 'eq', value: userPointer('uA') };
    for (const op of ['find', 'get', 'count', 'delete'] as const) {
      expect(decideClass({ className: '_Session', schema: undefined, op, caller: alice })).toStrictEqual({
        allowed: true,
        layer: 'system',
        rule: 'system.session',
        reason: 'a user sees and revokes only their own sessions',
        condition: own,
      });
    }
    const open = schemaOf('_Session', { find: { '*': true } });
    expect(
      decideClass({ className: '_Session', schema: open, op: 'find', caller: alice }).condition,
    ).toStrictEqual(own);
    const closed = schemaOf('_Session', { find: {} });
    expect(decideClass({ className: '_Session', schema: closed, op: 'find', caller: alice })).toMatchObject({
      allowed: false,
      layer: 'clp',
      rule: 'clp.none',
      code: 119,
    });
    const pointer = schemaOf('_Session', { find: { pointerFields: ['owner'] } });
    expect(decideClass({ className: '_Session', schema: pointer, op: 'find', caller: alice })).toStrictEqual({
      allowed: true,
      layer: 'system',
      rule: 'system.session',
      reason: 'a user sees and revokes only their own sessions',
      condition: {
        type: 'and',
        children: [own, { type: 'compare', path: ['owner'], op: 'eq', value: userPointer('uA') }],
      },
    });
  });

  it('_Installation: find and delete are master-only, a device creates and updates its own row', () => {
    for (const op of ['find', 'delete'] as const) {
      expect(
        decideClass({ className: '_Installation', schema: undefined, op, caller: device }),
      ).toStrictEqual({
        allowed: false,
        layer: 'system',
        rule: 'system.masterOnly',
        reason: `${op} on _Installation is master-only`,
        ...MASTER_REQUIRED,
      });
    }
    expect(
      decideClass({ className: '_Installation', schema: undefined, op: 'create', caller: anon }),
    ).toStrictEqual({
      allowed: true,
      layer: 'system',
      rule: 'system.installation',
      reason: 'installations are created by their device',
    });
    expect(
      decideClass({ className: '_Installation', schema: undefined, op: 'update', caller: device }),
    ).toStrictEqual({
      allowed: true,
      layer: 'system',
      rule: 'system.installation',
      reason: 'an installation is updated by the device whose X-Backend-Installation-Id it holds',
      condition: { type: 'compare', path: ['installationId'], op: 'eq', value: 'inst-1' },
    });
    expect(
      decideClass({ className: '_Installation', schema: undefined, op: 'update', caller: anon }).condition,
    ).toStrictEqual({ type: 'in', path: ['objectId'], values: [], not: false });
    expect(MATCH_NOTHING).toStrictEqual({ type: 'in', path: ['objectId'], values: [], not: false });
    // get and count follow the class-level permissions.
    expect(
      decideClass({
        className: '_Installation',
        schema: schemaOf('_Installation', { get: {} }),
        op: 'get',
        caller: device,
      }),
    ).toMatchObject({ allowed: false, rule: 'clp.none' });
  });

  it('a class that does not exist yet is open; an existing one follows its CLP', () => {
    expect(decideClass({ className: 'Fresh', schema: undefined, op: 'create', caller: anon })).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.noClass',
      reason: 'Fresh does not exist yet',
    });
    expect(
      decideClass({
        className: 'Kept',
        schema: schemaOf('Kept', { create: {} }),
        op: 'create',
        caller: anon,
      }),
    ).toMatchObject({
      allowed: false,
      rule: 'clp.none',
      message: 'Permission denied for action create on class Kept.',
    });
  });
});

describe('the master-only surfaces', () => {
  it('name what was tried, with and without a class', () => {
    expect(decideMasterSurface(MASTER, 'schema', 'Kept')).toStrictEqual({
      allowed: true,
      layer: 'master',
      rule: 'master',
      reason: 'changing a class schema (Kept) is allowed with the master key',
    });
    expect(decideMasterSurface(alice, 'config')).toStrictEqual({
      allowed: false,
      layer: 'system',
      rule: 'system.masterOnly',
      reason: 'changing the config is master-only',
      ...MASTER_REQUIRED,
    });
    expect(decideMasterSurface(anon, 'purge', 'Kept')).toMatchObject({
      allowed: false,
      reason: 'purging a class (Kept) is master-only',
    });
  });
});

describe('class-level permissions', () => {
  it('the master key bypasses them; an operation without an entry is public', () => {
    expect(decideClp(schemaOf('K', { find: {} }), 'find', MASTER)).toMatchObject({
      allowed: true,
      rule: 'master',
    });
    expect(decideClp(schemaOf('K', {}), 'count', anon)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.noEntry',
      reason: 'count has no class-level permission entry, so it is public',
    });
    expect(decideClp(schemaOf('K'), 'delete', anon)).toMatchObject({ allowed: true, rule: 'clp.noEntry' });
  });

  it('requiresAuthentication refuses an anonymous caller with 101 before `*`', () => {
    const clp = { find: { '*': true, requiresAuthentication: true } };
    expect(decideClp(schemaOf('K', clp), 'find', anon)).toStrictEqual({
      allowed: false,
      layer: 'clp',
      rule: 'clp.requiresAuthentication',
      reason: 'find on K requires an authenticated user and no session token was sent',
      code: 101,
      message: 'Permission denied, user needs to be authenticated.',
      entry: 'requiresAuthentication',
    });
    expect(decideClp(schemaOf('K', clp), 'find', alice)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.public',
      reason: 'find on K is public',
      entry: '*',
    });
    expect(decideClp(schemaOf('K', { get: { requiresAuthentication: true } }), 'get', alice)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.authenticated',
      reason: 'get on K is open to every authenticated user',
      entry: 'requiresAuthentication',
    });
    // Only `true` counts.
    expect(decideClp(schemaOf('K', { get: { requiresAuthentication: 'yes' } }), 'get', anon)).toMatchObject({
      allowed: false,
      rule: 'clp.none',
    });
  });

  it('grants to a user id or a role, with the chain of the role', () => {
    expect(decideClp(schemaOf('K', { update: { uA: true } }), 'update', alice)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.principal',
      reason: 'update on K is granted to uA',
      entry: 'uA',
    });
    expect(decideClp(schemaOf('K', { update: { 'role:Staff': true } }), 'update', editor)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.principal',
      reason: 'update on K is granted to role:Staff',
      entry: 'role:Staff',
      roleChain: ['Staff'],
    });
    expect(decideClp(schemaOf('K', { update: { uA: 'true' } }), 'update', alice).allowed).toBe(false);
    // An entry that is not an object grants nothing.
    expect(decideClp(schemaOf('K', { find: true }), 'find', alice).allowed).toBe(false);
  });

  it('refuses with 119 and the operation in the message', () => {
    expect(decideClp(schemaOf('K', { find: { uB: true } }), 'find', alice)).toStrictEqual({
      allowed: false,
      layer: 'clp',
      rule: 'clp.none',
      reason: 'no find grant on K matches the caller',
      code: 119,
      message: 'Permission denied for action find on class K.',
    });
    // addField is never granted through pointer fields.
    expect(
      decideClp(schemaOf('K', { addField: { pointerFields: ['owner'] } }), 'addField', alice),
    ).toStrictEqual({
      allowed: false,
      layer: 'clp',
      rule: 'clp.none',
      reason: 'no addField grant on K matches the caller',
      code: 119,
      message: 'Permission denied for action addField on class K.',
    });
  });

  it('pointer permissions: reads use readUserFields, writes writeUserFields, each with pointerFields', () => {
    const clp = {
      find: { pointerFields: ['owner', 7] },
      get: {},
      update: { pointerFields: 'owner' },
      delete: {},
      readUserFields: ['owner', 'readers'],
      writeUserFields: ['editors'],
    };
    expect(decideClp(schemaOf('K', clp), 'find', alice)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.pointer',
      reason: 'find on K is granted on rows whose owner or readers points at the caller',
      entry: 'pointer:owner,pointer:readers',
      condition: {
        type: 'or',
        children: [
          { type: 'compare', path: ['owner'], op: 'eq', value: userPointer('uA') },
          { type: 'compare', path: ['readers'], op: 'eq', value: userPointer('uA') },
        ],
      },
    });
    expect(decideClp(schemaOf('K', clp), 'get', alice).entry).toBe('pointer:owner,pointer:readers');
    expect(decideClp(schemaOf('K', clp), 'update', alice)).toStrictEqual({
      allowed: true,
      layer: 'clp',
      rule: 'clp.pointer',
      reason: 'update on K is granted on rows whose editors points at the caller',
      entry: 'pointer:editors',
      condition: { type: 'compare', path: ['editors'], op: 'eq', value: userPointer('uA') },
    });
    expect(decideClp(schemaOf('K', clp), 'delete', alice).entry).toBe('pointer:editors');
    expect(decideClp(schemaOf('K', { find: {}, readUserFields: 'owner' }), 'find', alice).rule).toBe(
      'clp.none',
    );
  });

  it('pointer permissions never grant create, nor anything to an anonymous caller', () => {
    const clp = { create: { pointerFields: ['owner'] }, find: { pointerFields: ['owner'] } };
    expect(decideClp(schemaOf('K', clp), 'create', alice)).toStrictEqual({
      allowed: false,
      layer: 'clp',
      rule: 'clp.none',
      reason: 'pointer permissions never grant create on K',
      code: 119,
      message: 'Permission denied for action create on class K.',
    });
    expect(decideClp(schemaOf('K', clp), 'find', anon)).toStrictEqual({
      allowed: false,
      layer: 'clp',
      rule: 'clp.none',
      reason: 'find on K is granted through pointer fields, and no user is signed in',
      code: 119,
      message: 'Permission denied for action find on class K.',
    });
  });

  it('pointsAtUser: one field compares, several are or-ed', () => {
    expect(pointsAtUser(['a'], 'u1')).toStrictEqual({
      type: 'compare',
      path: ['a'],
      op: 'eq',
      value: { __type: 'Pointer', className: '_User', objectId: 'u1' },
    });
    expect(pointsAtUser(['a', 'b'], 'u1')).toMatchObject({
      type: 'or',
      children: [{ path: ['a'] }, { path: ['b'] }],
    });
  });
});

describe('protectedFields', () => {
  const row = (fields: Record<string, unknown>): Row => ({ objectId: 'r1', ...fields }) as Row;
  const patterns = {
    '*': ['a', 'b', 'c', 'a'],
    authenticated: ['b', 'c', 'd'],
    'role:Editors': ['c', 'b'],
    uE: ['c', 'x'],
    'userField:owner': ['c'],
    other: ['b'],
  };

  it('master sees everything and may query on anything', () => {
    const view = protectedView(schemaOf('K', { protectedFields: patterns }), MASTER, { ownerExempt: true });
    expect(view.hidden(row({}))).toEqual([]);
    expect(view.groups(row({}))).toEqual([]);
    expect([...view.unqueryable]).toEqual([]);
  });

  it('hides the intersection of the groups that match the caller', () => {
    const schema = schemaOf('K', { protectedFields: patterns });
    const forAnon = protectedView(schema, anon, { ownerExempt: false });
    expect(forAnon.groups(row({}))).toEqual([{ pattern: '*', fields: ['a', 'b', 'c', 'a'] }]);
    expect(forAnon.hidden(row({}))).toEqual(['a', 'b', 'c']);
    expect([...forAnon.unqueryable]).toEqual(['a', 'b', 'c']);

    const forAlice = protectedView(schema, alice, { ownerExempt: false });
    expect(forAlice.groups(row({})).map((g) => g.pattern)).toEqual(['*', 'authenticated']);
    expect(forAlice.hidden(row({}))).toEqual(['b', 'c']);

    const forEditor = protectedView(schema, editor, { ownerExempt: false });
    expect(forEditor.groups(row({})).map((g) => g.pattern)).toEqual([
      '*',
      'authenticated',
      'role:Editors',
      'uE',
    ]);
    expect(forEditor.hidden(row({}))).toEqual(['c']);
    expect([...forEditor.unqueryable]).toEqual(['c']);
  });

  it('userField groups apply on rows whose field points at the caller (pointer, object or array)', () => {
    const schema = schemaOf('K', {
      protectedFields: { 'userField:owner': ['s', 't'], 'userField:team': ['s'] },
    });
    const view = protectedView(schema, alice, { ownerExempt: false });
    expect(view.hidden(row({ owner: userPointer('uA') }))).toEqual(['s', 't']);
    expect(view.hidden(row({ owner: { __type: 'Object', className: '_User', objectId: 'uA' } }))).toEqual([
      's',
      't',
    ]);
    expect(view.hidden(row({ owner: [userPointer('uB'), userPointer('uA')] }))).toEqual(['s', 't']);
    expect(view.groups(row({ owner: userPointer('uA'), team: [userPointer('uA')] }))).toEqual([
      { pattern: 'userField:owner', fields: ['s', 't'] },
      { pattern: 'userField:team', fields: ['s'] },
    ]);
    for (const owner of [
      userPointer('uB'),
      { __type: 'Pointer', className: 'Team', objectId: 'uA' },
      { __type: 'Date', className: '_User', objectId: 'uA' },
      'uA',
      [],
    ]) {
      expect(view.hidden(row({ owner }))).toEqual([]);
    }
    // No static group: every userField list is unqueryable, since some row may hide it.
    expect([...view.unqueryable].sort()).toEqual(['s', 't']);
    // Without a user, userField groups never apply.
    const forAnon = protectedView(schema, anon, { ownerExempt: false });
    expect(forAnon.hidden(row({ owner: userPointer('uA') }))).toEqual([]);
    expect([...forAnon.unqueryable]).toEqual([]);
  });

  it('ignores what is not a list of names', () => {
    const schema = schemaOf('K', { protectedFields: { '*': ['a', 3, null], authenticated: 'b' } });
    const view = protectedView(schema, alice, { ownerExempt: false });
    expect(view.groups(row({}))).toEqual([
      { pattern: '*', fields: ['a'] },
      { pattern: 'authenticated', fields: [] },
    ]);
    expect(view.hidden(row({}))).toEqual([]);
    expect(
      protectedView(schemaOf('K', { protectedFields: ['a'] }), alice, { ownerExempt: false }).hidden(row({})),
    ).toEqual([]);
    expect(protectedView(schemaOf('K'), alice, { ownerExempt: false }).hidden(row({}))).toEqual([]);
  });

  it('on _User: password and authData are never queryable, and the owner may be exempt', () => {
    const schema = schemaOf('_User', { protectedFields: { '*': ['email'] } });
    const exempt = protectedView(schema, alice, { ownerExempt: true });
    expect([...exempt.unqueryable]).toEqual(['email', 'password', 'authData']);
    expect(exempt.hidden({ objectId: 'uA' } as Row)).toEqual([]);
    expect(exempt.groups({ objectId: 'uA' } as Row)).toEqual([]);
    expect(exempt.hidden({ objectId: 'uB' } as Row)).toEqual(['email']);
    const notExempt = protectedView(schema, alice, { ownerExempt: false });
    expect(notExempt.hidden({ objectId: 'uA' } as Row)).toEqual(['email']);
    // The exemption is for _User only.
    const other = protectedView(schemaOf('K', { protectedFields: { '*': ['email'] } }), alice, {
      ownerExempt: true,
    });
    expect(other.hidden({ objectId: 'uA' } as Row)).toEqual(['email']);
    expect([...other.unqueryable]).toEqual(['email']);
    // An anonymous caller is never the owner.
    const forAnon = protectedView(schema, anon, { ownerExempt: true });
    expect(forAnon.hidden({} as Row)).toEqual(['email']);
  });

  it('explains which groups applied and what their intersection hides', () => {
    const schema = schemaOf('K', {
      protectedFields: { '*': ['a', 'b'], authenticated: ['b'], other: ['z'] },
    });
    expect(explainProtected(protectedView(schema, alice, { ownerExempt: false }), row({}))).toStrictEqual({
      allowed: true,
      layer: 'protectedFields',
      rule: 'protectedFields.view',
      reason: 'groups * [a, b], authenticated [b] apply; their intersection hides b',
      hidden: ['b'],
    });
    const disjoint = schemaOf('K', { protectedFields: { '*': ['a'], authenticated: ['b'] } });
    expect(explainProtected(protectedView(disjoint, alice, { ownerExempt: false }), row({}))).toMatchObject({
      reason: 'groups * [a], authenticated [b] apply; their intersection is empty',
      hidden: [],
    });
    expect(
      explainProtected(protectedView(schemaOf('K', {}), alice, { ownerExempt: false }), row({})),
    ).toMatchObject({
      reason: 'no protectedFields group applies to the caller, so every field is visible',
      hidden: [],
    });
  });
});
