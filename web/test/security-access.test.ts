import { describe, expect, it } from 'vitest';
import {
  type Clp,
  completeClp,
  dangerousSettings,
  describeClpChanges,
  fieldVerdict,
  grants,
  principalsOf,
  removePrincipal,
  setGrant,
  setPointerField,
  setProtectedFields,
  setRequiresAuthentication,
  setUserField,
} from '../src/features/security/access/clp.ts';

const OPEN: Clp = {
  find: { '*': true },
  get: { '*': true },
  count: { '*': true },
  create: { '*': true },
  update: { '*': true },
  delete: { '*': true },
  addField: { '*': true },
  protectedFields: { '*': [] },
};

const LOCKED: Clp = {
  find: { 'role:Staff': true },
  get: { 'role:Staff': true },
  count: {},
  create: {},
  update: {},
  delete: {},
  addField: {},
};

describe('editing a CLP', () => {
  it('treats a missing operation entry as public and makes it explicit when edited', () => {
    expect(grants({}, 'find', '*')).toBe(true);
    expect(grants({}, 'find', 'role:A')).toBe(false);
    expect(setGrant({}, 'find', '*', false)).toEqual({ find: {} });
    expect(setGrant({}, 'find', 'role:A', true)).toEqual({ find: { '*': true, 'role:A': true } });
  });

  it('sends a whole document: every operation and protectedFields named, as the service reads the saved one', () => {
    // The service stores an operation a saved document leaves out as master-only; the console names
    // each one as it reads it (a document stored before that rule reads a missing one as public).
    expect(completeClp({ find: { 'role:A': true }, readUserFields: ['owner'] })).toEqual({
      find: { 'role:A': true },
      get: { '*': true },
      count: { '*': true },
      create: { '*': true },
      update: { '*': true },
      delete: { '*': true },
      addField: { '*': true },
      protectedFields: {},
      readUserFields: ['owner'],
    });
    expect(completeClp(OPEN)).toEqual(OPEN);
    expect(completeClp(LOCKED)).toEqual({ ...LOCKED, protectedFields: {} });
  });

  it('toggles requiresAuthentication, pointer fields and user fields without touching the rest', () => {
    let clp = setRequiresAuthentication(OPEN, 'find', true);
    expect(clp.find).toEqual({ '*': true, requiresAuthentication: true });
    clp = setRequiresAuthentication(clp, 'find', false);
    expect(clp.find).toEqual({ '*': true });
    clp = setPointerField(LOCKED, 'update', 'owner', true);
    expect(clp.update).toEqual({ pointerFields: ['owner'] });
    expect(setPointerField(clp, 'update', 'owner', false).update).toEqual({});
    clp = setUserField(LOCKED, 'readUserFields', 'owner', true);
    expect(clp.readUserFields).toEqual(['owner']);
    expect('readUserFields' in setUserField(clp, 'readUserFields', 'owner', false)).toBe(false);
    expect(LOCKED.update).toEqual({});
  });

  it('lists principals public first, then roles, then users, and removes one everywhere', () => {
    const clp = setGrant(setGrant(LOCKED, 'delete', 'u123', true), 'count', 'role:Alpha', true);
    expect(principalsOf(clp)).toEqual(['*', 'role:Alpha', 'role:Staff', 'u123']);
    const without = removePrincipal(clp, 'role:Staff');
    expect(principalsOf(without)).toEqual(['*', 'role:Alpha', 'u123']);
    expect(without.find).toEqual({});
  });
});

describe('the changes in words', () => {
  it('names each grant gained or lost, requiresAuthentication, pointer and user fields', () => {
    let after = setGrant(OPEN, 'find', '*', false);
    after = setGrant(after, 'find', 'role:Staff', true);
    after = setRequiresAuthentication(after, 'get', true);
    after = setPointerField(after, 'update', 'owner', true);
    after = setUserField(after, 'writeUserFields', 'owner', true);
    expect(describeClpChanges(OPEN, after)).toEqual([
      'find: the public may no longer find',
      'find: role Staff may now find',
      'get: requiresAuthentication turned on',
      'update: users that owner points at may now update',
      'writeUserFields: owner added',
    ]);
  });

  it('names users by username when known and describes protectedFields patterns', () => {
    let after = setGrant(OPEN, 'delete', 'u1', true);
    after = setProtectedFields(after, { '*': ['email'], 'role:Staff': [] });
    expect(describeClpChanges(OPEN, after, { u1: 'ann' })).toEqual([
      'delete: user ann may now delete',
      'protectedFields: * now hides [email] (was [])',
      'protectedFields: pattern role:Staff added, hiding []',
    ]);
    expect(describeClpChanges(after, OPEN)).toEqual([
      'delete: user u1 may no longer delete',
      'protectedFields: * now hides [] (was [email])',
      'protectedFields: pattern role:Staff removed (it hid [])',
    ]);
  });

  it('says nothing when only the form of an entry changes (missing vs {*: true})', () => {
    expect(describeClpChanges({}, { find: { '*': true } })).toEqual([]);
  });
});

describe('dangerous settings', () => {
  const ids = (clp: Clp, fields: string[] = []) => dangerousSettings('Post', clp, fields).map((w) => w.id);

  it('warns about public create, update, delete and an open addField', () => {
    expect(ids(OPEN)).toEqual(['public-create', 'public-update', 'public-delete', 'addField-open']);
    expect(ids({})).toEqual(['public-create', 'public-update', 'public-delete', 'addField-open']);
    expect(dangerousSettings('Post', OPEN, [])[0]?.text).toBe(
      'Anyone with the application keys may create rows of Post (public create).',
    );
    expect(ids(LOCKED)).toEqual([]);
  });

  it('does not call an operation public when it requires authentication', () => {
    let clp = LOCKED;
    for (const op of ['create', 'update', 'delete'] as const) {
      clp = setRequiresAuthentication(setGrant(clp, op, '*', true), op, true);
    }
    expect(ids(clp)).toEqual([]);
  });

  it('counts addField open to any principal, not only the public', () => {
    expect(ids(setGrant(LOCKED, 'addField', 'role:Staff', true))).toEqual(['addField-open']);
  });

  it('warns about an email- or token-like field in a class everyone may read, unless * protects it', () => {
    const readable = setGrant(LOCKED, 'find', '*', true);
    expect(ids(readable, ['title', 'email', 'resetToken'])).toEqual(['sensitive-readable']);
    expect(dangerousSettings('Post', readable, ['title', 'email', 'resetToken'])[0]?.text).toBe(
      'Post is readable by everyone (public find) and holds email, resetToken, which look like emails or secrets: protect them under * or restrict reads.',
    );
    expect(
      ids(setProtectedFields(readable, { '*': ['email', 'resetToken'] }), ['email', 'resetToken']),
    ).toEqual([]);
    expect(ids(LOCKED, ['email'])).toEqual([]);
    expect(ids(readable, ['title'])).toEqual([]);
  });
});

describe('why a field is hidden', () => {
  const groups = [
    { pattern: '*', fields: ['email', 'phone'] },
    { pattern: 'role:Editors', fields: ['email'] },
  ];
  it('explains the intersection', () => {
    expect(fieldVerdict('email', ['email'], groups)).toBe(
      'hidden: every group that applies lists it (*, role:Editors)',
    );
    expect(fieldVerdict('phone', ['email'], groups)).toBe(
      'visible: * list it, but role:Editors does not (only fields every group lists are hidden)',
    );
    expect(fieldVerdict('title', ['email'], groups)).toBe('visible: no group that applies lists it');
  });
});
