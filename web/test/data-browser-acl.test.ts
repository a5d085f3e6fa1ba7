import { describe, expect, it } from 'vitest';
import {
  aclWords,
  commonAcl,
  holdersWords,
  inheritingRoles,
  isMasterOnly,
  rowAcl,
  setPermission,
  wireAcl,
} from '../src/features/data-browser/lib/acl.ts';
import {
  differs,
  diffResults,
  parseViewpoint,
  viewpointParam,
} from '../src/features/data-browser/lib/viewpoint.ts';

const none = { users: {}, inheritors: {} };

describe('ACL in words', () => {
  it('marks the empty ACL master key only', () => {
    expect(aclWords({}, none)).toEqual({
      masterOnly: true,
      read: 'Readable by: no one but the master key.',
      write: 'Writable by: no one but the master key.',
    });
    // Principals left without a flag grant nothing: still master key only.
    expect(isMasterOnly({ '*': {} })).toBe(true);
    expect(aclWords({ u1: {} }, none).masterOnly).toBe(true);
  });

  it('names the public, users and roles', () => {
    const names = { users: { u1: 'ann', u2: 'bob', u3: 'cy' }, inheritors: {} };
    expect(aclWords({ '*': { read: true } }, names)).toEqual({
      masterOnly: false,
      read: 'Readable by: the public (everyone, signed in or not).',
      write: 'Writable by: no one but the master key.',
    });
    expect(holdersWords({ u1: { read: true } }, 'read', names)).toBe('the user ann');
    expect(
      holdersWords(
        { u1: { read: true }, u2: { read: true }, u3: { read: true, write: true } },
        'read',
        names,
      ),
    ).toBe('these 3 users (ann, bob and cy)');
    // An id without a known username is shown as the id.
    expect(holdersWords({ zz: { write: true } }, 'write', names)).toBe('the user zz');
  });

  it('follows role inheritance in the direction of the roles relation (docs/protocol.md#built-in-classes)', () => {
    // Admins is in Editors' roles relation: Admins' members get Editors' capabilities.
    const inheritors = { Editors: ['Admins'], Admins: ['Owners'], Owners: ['Editors'] };
    expect(inheritingRoles('Editors', inheritors)).toEqual(['Admins', 'Owners']);
    expect(inheritingRoles('Viewers', inheritors)).toEqual([]);
    const names = { users: { u1: 'ann' }, inheritors: { Editors: ['Admins'] } };
    expect(aclWords({ 'role:Editors': { read: true }, u1: { read: true, write: true } }, names)).toEqual({
      masterOnly: false,
      read: 'Readable by: the user ann; members of Editors, which includes members of Admins.',
      write: 'Writable by: the user ann.',
    });
    expect(holdersWords({ 'role:Editors': { read: true } }, 'read', { users: {}, inheritors })).toBe(
      'members of Editors, which includes members of Admins and Owners',
    );
  });

  it('edits, cleans and compares ACLs', () => {
    let acl = setPermission({}, 'u1', 'read', true);
    acl = setPermission(acl, 'u1', 'write', true);
    acl = setPermission(acl, 'u1', 'read', false);
    acl = setPermission(acl, '*', 'read', false);
    expect(acl).toEqual({ u1: { write: true }, '*': {} });
    expect(wireAcl(acl)).toEqual({ u1: { write: true } });
    // A row stored without an ACL is public read and write.
    expect(rowAcl(undefined)).toEqual({ '*': { read: true, write: true } });
    expect(commonAcl([{ u1: { read: true } }, { u1: { read: true, write: false } }])).toEqual({
      u1: { read: true },
    });
    expect(commonAcl([{ u1: { read: true } }, {}])).toBeNull();
  });
});

describe('viewpoints', () => {
  it('round-trips the URL parameter and treats anything else as master', () => {
    for (const vp of [
      { kind: 'anonymous' as const },
      { kind: 'user' as const, userId: 'u1' },
      { kind: 'roles' as const, roles: ['Editors', 'Viewers'] },
    ])
      expect(parseViewpoint(viewpointParam(vp))).toEqual(vp);
    expect(parseViewpoint('user:')).toBeNull();
    expect(parseViewpoint('roles:')).toBeNull();
    expect(parseViewpoint('someone')).toBeNull();
    expect(viewpointParam(null)).toBeNull();
  });

  it('marks rows and fields only one side gets', () => {
    const left = [
      { objectId: 'a', title: 'x', secret: 1 },
      { objectId: 'b', title: 'y' },
    ];
    const right = [
      { objectId: 'a', title: 'x' },
      { objectId: 'c', title: 'z' },
    ];
    const d = diffResults(left, right);
    expect(d).toEqual([
      { objectId: 'a', inLeft: true, inRight: true, onlyLeft: ['secret'], onlyRight: [] },
      { objectId: 'b', inLeft: true, inRight: false, onlyLeft: [], onlyRight: [] },
      { objectId: 'c', inLeft: false, inRight: true, onlyLeft: [], onlyRight: [] },
    ]);
    expect(d.map(differs)).toEqual([true, true, true]);
    expect(differs(diffResults([{ objectId: 'a' }], [{ objectId: 'a' }])[0]!)).toBe(false);
  });
});
