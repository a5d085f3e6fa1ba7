import { expect } from 'vitest';
import { createClass, createRole, createRow, createUser, pointer, type TestUser } from './access-world.ts';
import { startService, type TestService } from './service.ts';

/**
 * Two worlds an attacker probes with app keys only, with a session, and in a role, against every
 * read and write path.
 */

/**
 * Users alice, bob and carol (in role Staff), each with an email (protected under "*"), and class
 * Doc (open CLP, `secret` protected from all but Staff) with the rows `public`, `alicePrivate`,
 * `writeOnly` (public write only), `masterOnly` (empty ACL) and `pointing` (pointers to
 * alicePrivate, bob and bob's session).
 */
export interface DocWorld {
  t: TestService;
  alice: TestUser;
  bob: TestUser;
  carol: TestUser;
  aliceSessionId: string;
  bobSessionId: string;
  ids: Record<string, string>;
}

export async function buildDocWorld(): Promise<DocWorld> {
  let aliceSessionId = '';
  let bobSessionId = '';
  const ids: Record<string, string> = {};
  const t = await startService();
  const alice = await createUser(t, 'alice');
  const bob = await createUser(t, 'bob');
  const carol = await createUser(t, 'carol');
  await createRole(t, 'Staff', { users: [carol.id] });
  // email on each user (protected under "*").
  for (const u of [alice, bob, carol]) {
    const r = await t.request('PUT', `/users/${u.id}`, {
      as: 'master',
      body: { email: `${u.username}@x.io` },
    });
    expect(r.status, r.text).toBe(200);
  }
  const sessions = await t.request('GET', '/sessions', { as: 'master', query: { limit: 100 } });
  for (const s of sessions.json.results) {
    if (s.user.objectId === alice.id) aliceSessionId = s.objectId;
    if (s.user.objectId === bob.id) bobSessionId = s.objectId;
  }
  await createClass(
    t,
    'Doc',
    {
      title: { type: 'String' },
      secret: { type: 'String' },
      score: { type: 'Number' },
      tags: { type: 'Array' },
      owner: { type: 'Pointer', targetClass: '_User' },
      ref: { type: 'Pointer', targetClass: 'Doc' },
      refs: { type: 'Array' },
      meta: { type: 'Object' },
      rel: { type: 'Relation', targetClass: 'Doc' },
    },
    {
      find: { '*': true },
      get: { '*': true },
      count: { '*': true },
      create: { '*': true },
      update: { '*': true },
      delete: { '*': true },
      addField: {},
      protectedFields: { '*': ['secret'], 'role:Staff': [] },
    },
  );
  ids.public = await createRow(t, 'Doc', {
    title: 'public',
    secret: 's-public',
    score: 1,
    ACL: { '*': { read: true, write: true } },
  });
  ids.alicePrivate = await createRow(t, 'Doc', {
    title: 'alice-only',
    secret: 's-alice',
    score: 42,
    tags: ['hidden-tag'],
    owner: pointer('_User', alice.id),
    ACL: { [alice.id]: { read: true, write: true } },
  });
  ids.writeOnly = await createRow(t, 'Doc', {
    title: 'write-only',
    secret: 's-writeonly',
    score: 777,
    tags: ['wo-tag-1', 'wo-tag-2'],
    meta: { n: 5 },
    ACL: { '*': { write: true } },
  });
  ids.masterOnly = await createRow(t, 'Doc', { title: 'master-only', score: 9, ACL: {} });
  ids.pointing = await createRow(t, 'Doc', {
    title: 'pointing',
    ref: pointer('Doc', ids.alicePrivate),
    refs: [pointer('Doc', ids.alicePrivate), pointer('_User', bob.id), pointer('_Session', bobSessionId)],
    owner: pointer('_User', bob.id),
    ACL: { '*': { read: true } },
  });
  return { t, alice, bob, carol, aliceSessionId, bobSessionId, ids };
}

/**
 * Users alice2, bob2 and carol2 (in Staff, which is in Managers; bob2 in a Hidden role no one may
 * read); class Note behind requiresAuthentication, class Mine behind readUserFields and
 * writeUserFields on `author`, and class Link pointing at Mine.
 */
export interface NoteWorld {
  t: TestService;
  alice: TestUser;
  bob: TestUser;
  carol: TestUser;
  ids: Record<string, string>;
}

export async function buildNoteWorld(): Promise<NoteWorld> {
  const ids: Record<string, string> = {};
  const t = await startService();
  const alice = await createUser(t, 'alice2');
  const bob = await createUser(t, 'bob2');
  const carol = await createUser(t, 'carol2');
  const staff = await createRole(t, 'Staff', { users: [carol.id] });
  ids.managers = await createRole(t, 'Managers', { roles: [staff] });
  const hidden = await t.request('POST', '/roles', {
    as: 'master',
    body: { name: 'Hidden', ACL: {}, users: { __op: 'AddRelation', objects: [pointer('_User', bob.id)] } },
  });
  ids.hiddenRole = hidden.json.objectId;
  await createClass(
    t,
    'Note',
    { body: { type: 'String' }, author: { type: 'Pointer', targetClass: '_User' } },
    {
      find: { requiresAuthentication: true },
      get: { requiresAuthentication: true },
      count: { requiresAuthentication: true },
      create: { '*': true },
      update: { '*': true },
      delete: { '*': true },
      addField: {},
    },
  );
  await createClass(
    t,
    'Mine',
    { body: { type: 'String' }, author: { type: 'Pointer', targetClass: '_User' } },
    {
      find: {},
      get: {},
      count: {},
      create: { '*': true },
      update: {},
      delete: {},
      addField: {},
      readUserFields: ['author'],
      writeUserFields: ['author'],
    },
  );
  await createClass(t, 'Link', { to: { type: 'Pointer', targetClass: 'Mine' }, many: { type: 'Array' } });
  ids.managersNote = await createRow(t, 'Note', {
    body: 'for-managers',
    ACL: { 'role:Managers': { read: true, write: true } },
  });
  ids.publicNote = await createRow(t, 'Note', { body: 'public-note', ACL: { '*': { read: true } } });
  ids.aliceMine = await createRow(t, 'Mine', {
    body: 'alice-mine',
    author: pointer('_User', alice.id),
    ACL: { '*': { read: true, write: true } },
  });
  ids.link = await createRow(t, 'Link', {
    to: pointer('Mine', ids.aliceMine),
    many: [pointer('Mine', ids.aliceMine)],
  });
  return { t, alice, bob, carol, ids };
}

/** A response's raw text, to check that a value appears nowhere in it. */
export const text = (r: { text: string }) => r.text;
