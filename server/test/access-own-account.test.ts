import { describe, expect, it } from 'vitest';
import { decideClass, decideOwnAccount } from '../src/access/class.ts';
import { anonymous, MASTER, makeCaller } from '../src/kernel/caller.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';

/**
 * The class-layer rules of the account classes as exact verdicts: `_User`'s own-account rule (a
 * user updates and deletes only their own row) before the CLP, and the account-only writers of
 * `_User` and `_Session` (users/own-account.test.ts holds REST, the Security API and cloud code to them).
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
const users = (clp: Record<string, unknown>): Pick<ClassSchema, 'className' | 'classLevelPermissions'> => ({
  className: '_User',
  classLevelPermissions: clp,
});
const OPEN = users({ update: { '*': true }, delete: { '*': true }, create: { '*': true } });
const mine = (id: string) => ({ type: 'compare', path: ['objectId'], op: 'eq', value: id });
const RULE = (op: string) =>
  `only the user whose row it is (signed in with their session) may ${op} a _User row`;

describe("_User's own-account rule", () => {
  it('refuses another row and an anonymous caller with 206 naming the row, or <id> without one', () => {
    expect(decideOwnAccount('update', alice, 'uB')).toStrictEqual({
      allowed: false,
      layer: 'system',
      rule: 'system.ownAccount',
      reason: RULE('update'),
      code: 206,
      message: 'Insufficient auth to update user uB.',
    });
    expect(decideOwnAccount('delete', anon, 'uA')).toMatchObject({
      allowed: false,
      code: 206,
      message: 'Insufficient auth to delete user uA.',
    });
    expect(decideOwnAccount('delete', anon)).toMatchObject({
      allowed: false,
      message: 'Insufficient auth to delete user <id>.',
    });
  });

  it('allows the own row (with or without naming it) on that row only; the master key anywhere', () => {
    const own = { allowed: true, layer: 'system', rule: 'system.ownAccount', condition: mine('uA') };
    expect(decideOwnAccount('update', alice, 'uA')).toStrictEqual({ ...own, reason: RULE('update') });
    expect(decideOwnAccount('delete', alice)).toStrictEqual({ ...own, reason: RULE('delete') });
    expect(decideOwnAccount('update', MASTER, 'uB')).toStrictEqual({
      allowed: true,
      layer: 'master',
      rule: 'master',
      reason: 'the master key may change any _User row',
    });
  });

  it('decideClass asks it before the CLP, then keeps the CLP entry, role chain and row condition', () => {
    const refused = decideClass({
      className: '_User',
      schema: OPEN,
      op: 'update',
      caller: alice,
      objectId: 'uB',
    });
    expect(refused).toMatchObject({ allowed: false, rule: 'system.ownAccount', code: 206 });
    // The CLP refuses too, but the own-account rule is asked first (as the account routes do).
    const closed = users({ update: {} });
    expect(
      decideClass({ className: '_User', schema: closed, op: 'update', caller: anon, objectId: 'uA' }),
    ).toMatchObject({
      rule: 'system.ownAccount',
      code: 206,
    });
    expect(
      decideClass({ className: '_User', schema: closed, op: 'update', caller: alice, objectId: 'uA' }),
    ).toStrictEqual({
      allowed: false,
      layer: 'clp',
      rule: 'clp.none',
      reason: 'no update grant on _User matches the caller',
      code: 119,
      message: 'Permission denied for action update on class _User.',
    });
    const byRole = users({ delete: { 'role:Editors': true }, writeUserFields: ['manager'] });
    expect(
      decideClass({ className: '_User', schema: byRole, op: 'delete', caller: editor, objectId: 'uE' }),
    ).toStrictEqual({
      allowed: true,
      layer: 'system',
      rule: 'system.ownAccount',
      reason: `${RULE('delete')}; delete on _User is granted to role:Editors`,
      entry: 'role:Editors',
      roleChain: ['Staff', 'Editors'],
      condition: mine('uE'),
    });
    const pointers = users({ update: { pointerFields: ['self'] } });
    expect(decideClass({ className: '_User', schema: pointers, op: 'update', caller: alice })).toMatchObject({
      allowed: true,
      rule: 'system.ownAccount',
      entry: 'pointer:self',
      condition: {
        type: 'and',
        children: [
          mine('uA'),
          {
            type: 'compare',
            path: ['self'],
            op: 'eq',
            value: { __type: 'Pointer', className: '_User', objectId: 'uA' },
          },
        ],
      },
    });
    // Sign-up, reads and addField follow the CLP alone.
    expect(decideClass({ className: '_User', schema: OPEN, op: 'create', caller: anon })).toMatchObject({
      allowed: true,
      rule: 'clp.public',
    });
    expect(decideClass({ className: '_User', schema: OPEN, op: 'get', caller: anon })).toMatchObject({
      allowed: true,
      rule: 'clp.noEntry',
    });
  });
});

describe('the account classes are written through the account routes only', () => {
  it('refuses any other source of a non-master write with 119, before any other rule', () => {
    for (const className of ['_User', '_Session']) {
      for (const op of ['create', 'update', 'delete'] as const) {
        expect(
          decideClass({ className, schema: OPEN, op, caller: alice, objectId: 'uA', source: 'cloud' }),
          `${className} ${op}`,
        ).toStrictEqual({
          allowed: false,
          layer: 'system',
          rule: 'system.accountRules',
          reason: `${className} rows are written through the account routes only (sign-up, /users/<id>, /sessions/<id>), not by a cloud write`,
          code: 119,
          message: `Permission denied for action ${op} on class ${className}.`,
        });
      }
    }
    // The account routes, a request as the REST routes make it, reads, and the master key pass on.
    expect(
      decideClass({
        className: '_User',
        schema: OPEN,
        op: 'update',
        caller: alice,
        objectId: 'uA',
        source: 'account',
      }),
    ).toMatchObject({
      allowed: true,
      rule: 'system.ownAccount',
    });
    expect(
      decideClass({ className: '_User', schema: OPEN, op: 'create', caller: anon, source: 'rest' }),
    ).toMatchObject({
      rule: 'system.accountRules',
    });
    expect(decideClass({ className: '_User', schema: OPEN, op: 'create', caller: anon })).toMatchObject({
      allowed: true,
    });
    expect(
      decideClass({ className: '_User', schema: OPEN, op: 'find', caller: anon, source: 'cloud' }),
    ).toMatchObject({
      allowed: true,
    });
    expect(
      decideClass({
        className: '_Session',
        schema: undefined,
        op: 'delete',
        caller: MASTER,
        source: 'cloud',
      }),
    ).toMatchObject({
      allowed: true,
      rule: 'master',
    });
    expect(
      decideClass({ className: 'Note', schema: OPEN, op: 'delete', caller: alice, source: 'cloud' }),
    ).toMatchObject({
      allowed: true,
      rule: 'clp.public',
    });
  });
});
