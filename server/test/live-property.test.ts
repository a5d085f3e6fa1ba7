import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pointer } from './helpers/access-world.ts';
import { flush, LiveClient, subscribeMarker } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * Random worlds (users, roles, ACLs, protectedFields) and random writes: every subscriber's events
 * must equal what a reference computed from REST reads as that subscriber predicts: the rows it may
 * read that match its where, before and after each write (no missing event, no extra event, no
 * hidden field).
 */

let t: TestService;
const USERS = 3;
const users: Array<{ id: string; token: string }> = [];

beforeAll(async () => {
  t = await startService({});
  for (let i = 0; i < USERS; i++) {
    const res = await t.request('POST', '/users', { body: { username: `prop${i}`, password: 'pw-123456' } });
    users.push({ id: res.json.objectId, token: res.json.sessionToken });
  }
});
afterAll(async () => {
  await t?.close();
});

type Who = number | 'anonymous' | 'master';
const WHO: Who[] = [0, 1, 2, 'anonymous', 'master'];

const WHERES = [{}, { room: 'a' }, { n: { $gt: 2 } }];
// A subscription may not name a field that protectedFields may hide from it (live-rest-parity.test.ts):
// the keys name visible fields only; without keys, the hidden field is still checked to be stripped.
const KEYSETS: Array<string[] | undefined> = [undefined, ['room', 'n']];

/** ACLs by index: no ACL, public, a user, a role, nobody (master only), a user and a role. */
const aclArb = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.constant({ kind: 'public' as const }),
  fc.record({ kind: fc.constant('user' as const), user: fc.integer({ min: 0, max: USERS - 1 }) }),
  fc.record({ kind: fc.constant('role' as const), role: fc.integer({ min: 0, max: 1 }) }),
  fc.constant({ kind: 'nobody' as const }),
);
type AclSpec = typeof aclArb extends fc.Arbitrary<infer T> ? T : never;

const writeArb = fc.oneof(
  fc.record({
    op: fc.constant('create' as const),
    room: fc.constantFrom('a', 'b'),
    n: fc.integer({ min: 0, max: 5 }),
    acl: aclArb,
  }),
  fc.record({
    op: fc.constant('update' as const),
    target: fc.nat(),
    room: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
    n: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
    acl: fc.option(aclArb, { nil: undefined }),
  }),
  fc.record({ op: fc.constant('delete' as const), target: fc.nat() }),
  fc.record({
    op: fc.constant('role' as const),
    role: fc.integer({ min: 0, max: 1 }),
    user: fc.integer({ min: 0, max: USERS - 1 }),
    add: fc.boolean(),
  }),
);

const worldArb = fc.record({
  members: fc.array(fc.array(fc.boolean(), { minLength: USERS, maxLength: USERS }), {
    minLength: 2,
    maxLength: 2,
  }),
  subs: fc.array(
    fc.record({
      where: fc.integer({ min: 0, max: WHERES.length - 1 }),
      keys: fc.integer({ min: 0, max: 1 }),
    }),
    { minLength: WHO.length, maxLength: WHO.length },
  ),
  writes: fc.array(writeArb, { minLength: 1, maxLength: 10 }),
});

let run = 0;

describe('realtime property: events equal the REST reference per subscriber', () => {
  it('random worlds and writes', async () => {
    await fc.assert(
      fc.asyncProperty(worldArb, async (world) => {
        run++;
        const cls = `Prop${run}`;
        const roleNames = [`PR${run}a`, `PR${run}b`];
        const roleIds: string[] = [];
        for (let r = 0; r < 2; r++) {
          const members = users.filter((_, i) => world.members[r]![i]).map((u) => pointer('_User', u.id));
          const body: Record<string, unknown> = { name: roleNames[r], ACL: { '*': { read: true } } };
          if (members.length) body.users = { __op: 'AddRelation', objects: members };
          roleIds.push((await t.request('POST', '/roles', { as: 'master', body })).json.objectId);
        }
        const schema = await t.request('POST', `/schemas/${cls}`, {
          as: 'master',
          body: {
            className: cls,
            fields: { room: { type: 'String' }, n: { type: 'Number' }, secret: { type: 'String' } },
            classLevelPermissions: {
              find: { '*': true },
              get: { '*': true },
              create: { '*': true },
              update: { '*': true },
              delete: { '*': true },
              addField: {},
              protectedFields: { '*': ['secret'], [`role:${roleNames[0]}`]: [] },
            },
          },
        });
        expect(schema.status).toBe(200);
        const aclOf = (spec: AclSpec): Record<string, unknown> | undefined => {
          switch (spec.kind) {
            case 'none':
              return undefined;
            case 'public':
              return { '*': { read: true } };
            case 'user':
              return { [users[spec.user]!.id]: { read: true } };
            case 'role':
              return { [`role:${roleNames[spec.role]}`]: { read: true } };
            default:
              return {};
          }
        };
        // Subscribers.
        const clients: LiveClient[] = [];
        for (let i = 0; i < WHO.length; i++) {
          const who = WHO[i]!;
          const extra =
            who === 'master'
              ? { masterKey: KEYS.masterKey }
              : who === 'anonymous'
                ? {}
                : { sessionToken: users[who]!.token };
          const c = await LiveClient.connect(t, extra);
          await subscribeMarker(c);
          const { where, keys } = world.subs[i]!;
          const ack = await c.subscribe(1, { className: cls, where: WHERES[where], keys: KEYSETS[keys] });
          expect(ack.op).toBe('subscribed');
          clients.push(c);
        }
        const read = async (i: number, where: unknown) => {
          const who = WHO[i]!;
          const keys = KEYSETS[world.subs[i]!.keys];
          const res = await t.request('GET', `/classes/${cls}`, {
            as: who === 'master' ? 'master' : 'rest',
            ...(typeof who === 'number' ? { sessionToken: users[who]!.token } : {}),
            query: { where, limit: 1000, ...(keys ? { keys: keys.join(',') } : {}) },
          });
          expect(res.status).toBe(200);
          return new Map<string, any>(
            res.json.results.map((r: any) => [r.objectId, { className: cls, ...r }]),
          );
        };
        const state = async () =>
          Promise.all(
            WHO.map(async (_, i) => ({
              readable: await read(i, {}),
              visible: await read(i, WHERES[world.subs[i]!.where]),
            })),
          );
        const expected: any[][] = WHO.map(() => []);
        const rows: string[] = [];
        let prev = await state();
        for (const w of world.writes) {
          let target: string | undefined;
          let op: 'create' | 'update' | 'delete' | undefined;
          if (w.op === 'create') {
            const body: Record<string, unknown> = { room: w.room, n: w.n, secret: `s${w.n}` };
            const acl = aclOf(w.acl);
            if (acl) body.ACL = acl;
            const res = await t.request('POST', `/classes/${cls}`, { as: 'master', body });
            target = res.json.objectId;
            rows.push(target!);
            op = 'create';
          } else if (w.op === 'update' || w.op === 'delete') {
            if (rows.length === 0) continue;
            target = rows[w.target % rows.length]!;
            if (w.op === 'delete') {
              await t.request('DELETE', `/classes/${cls}/${target}`, { as: 'master' });
              rows.splice(rows.indexOf(target), 1);
              op = 'delete';
            } else {
              const body: Record<string, unknown> = { secret: `u${Math.random()}` };
              if (w.room !== undefined) body.room = w.room;
              if (w.n !== undefined) body.n = w.n;
              if (w.acl !== undefined) body.ACL = aclOf(w.acl) ?? { '*': { read: true } };
              await t.request('PUT', `/classes/${cls}/${target}`, { as: 'master', body });
              op = 'update';
            }
          } else {
            await t.request('PUT', `/roles/${roleIds[w.role]}`, {
              as: 'master',
              body: {
                users: {
                  __op: w.add ? 'AddRelation' : 'RemoveRelation',
                  objects: [pointer('_User', users[w.user]!.id)],
                },
              },
            });
          }
          const now = await state();
          if (op && target) {
            for (let i = 0; i < WHO.length; i++) {
              const before = prev[i]!.visible.get(target);
              const after = now[i]!.visible.get(target);
              const frame = (kind: string, object: unknown, original?: unknown) => ({
                op: kind,
                object,
                ...(original === undefined ? {} : { original }),
              });
              if (op === 'create' && after) expected[i]!.push(frame('create', after));
              else if (op === 'delete' && before) expected[i]!.push(frame('delete', before));
              else if (op === 'update') {
                if (before && after) expected[i]!.push(frame('update', after, before));
                else if (after) expected[i]!.push(frame('enter', after, prev[i]!.readable.get(target)));
                else if (before) {
                  const stillReadable = now[i]!.readable.get(target);
                  expected[i]!.push(
                    frame('leave', stillReadable ?? { className: cls, objectId: target }, before),
                  );
                }
              }
            }
          }
          prev = now;
        }
        const received = await flush(t, ...clients);
        for (let i = 0; i < WHO.length; i++) {
          const got = received[i]!.map((f) => ({
            op: f.op,
            object: f.object,
            ...(f.original === undefined ? {} : { original: f.original }),
          }));
          expect({ who: WHO[i], events: got }).toEqual({ who: WHO[i], events: expected[i] });
          for (const f of received[i]!) {
            expect(f.requestId).toBe(1);
            expect(typeof f.eventId).toBe('string');
          }
        }
        for (const c of clients) c.close();
      }),
      { numRuns: 25, endOnFailure: true },
    );
  }, 180_000);
});
