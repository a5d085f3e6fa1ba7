import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClass, createRow, createUser, type TestUser } from './helpers/access-world.ts';
import { flush, LiveClient, subscribeMarker } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * Subscriptions are indexed by the equality of their where (`room: value`): an event decides only
 * the subscriptions whose room the row is in before or after the change (and those without such a
 * condition). These tests hold what each subscriber receives exactly equal to what the full
 * decision gives, across rooms, moves between rooms, ACLs and deletes.
 */

let t: TestService;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  t = await startService();
  alice = await createUser(t);
  bob = await createUser(t);
  await createClass(t, 'Chat', { room: { type: 'String' }, text: { type: 'String' }, n: { type: 'Number' } });
});
afterAll(async () => {
  await t?.close();
});

async function client(who: TestUser | 'anonymous' | 'master'): Promise<LiveClient> {
  const extra =
    who === 'master' ? { masterKey: KEYS.masterKey } : who === 'anonymous' ? {} : { sessionToken: who.token };
  const c = await LiveClient.connect(t, extra);
  await subscribeMarker(c);
  return c;
}

/** `op requestId objectId room` of each event frame, in order. */
const events = (frames: any[]) =>
  frames.map((f) => `${f.op} ${f.requestId} ${f.object?.objectId} ${f.object?.room ?? '-'}`);

async function update(id: string, body: Record<string, unknown>): Promise<void> {
  const res = await t.request('PUT', `/classes/Chat/${id}`, { as: 'master', body });
  expect(res.status).toBe(200);
}

describe('realtime subscription index', () => {
  it('subscriptions on different rooms get exactly their events: create, update, a move between rooms, delete', async () => {
    const c = await client('anonymous');
    // Two subscriptions on r1 (one with a further condition), one on r2, one on r3, one on no room.
    for (const [requestId, where] of [
      ['r1', { room: 'r1' }],
      ['r1-big', { room: 'r1', n: { $gt: 5 } }],
      ['r2', { room: { $eq: 'r2' } }],
      ['r3', { room: 'r3' }],
      ['all', {}],
    ] as const) {
      expect((await c.subscribe(requestId, { className: 'Chat', where })).op).toBe('subscribed');
    }
    const id = await createRow(t, 'Chat', { room: 'r1', text: 'hello', n: 1 });
    let [frames] = await flush(t, c);
    expect(events(frames!)).toEqual([`create r1 ${id} r1`, `create all ${id} r1`]);

    await update(id, { n: 9 });
    [frames] = await flush(t, c);
    expect(events(frames!)).toEqual([`update r1 ${id} r1`, `enter r1-big ${id} r1`, `update all ${id} r1`]);

    // Moved from r1 to r2: leave for the r1 subscribers, enter for r2's, nothing for r3.
    await update(id, { room: 'r2' });
    [frames] = await flush(t, c);
    expect(events(frames!)).toEqual([
      `leave r1 ${id} r2`,
      `leave r1-big ${id} r2`,
      `enter r2 ${id} r2`,
      `update all ${id} r2`,
    ]);
    const leave = frames!.find((f) => f.op === 'leave' && f.requestId === 'r1');
    expect(leave.original).toMatchObject({ objectId: id, room: 'r1' });
    const enter = frames!.find((f) => f.op === 'enter');
    expect(enter.original).toMatchObject({ objectId: id, room: 'r1' });

    await update(id, { text: 'still r2' });
    [frames] = await flush(t, c);
    expect(events(frames!)).toEqual([`update r2 ${id} r2`, `update all ${id} r2`]);

    const res = await t.request('DELETE', `/classes/Chat/${id}`, { as: 'master' });
    expect(res.status).toBe(200);
    [frames] = await flush(t, c);
    expect(events(frames!)).toEqual([`delete r2 ${id} r2`, `delete all ${id} r2`]);
    c.close();
  });

  it('many rooms: each subscriber receives the events of its room only, as its ACL allows', async () => {
    const [a, b, m] = await Promise.all([client(alice), client(bob), client('master')]);
    const rooms = ['x0', 'x1', 'x2', 'x3', 'x4'];
    for (const c of [a, b, m]) {
      for (const room of rooms) {
        expect((await c.subscribe(room, { className: 'Chat', where: { room } })).op).toBe('subscribed');
      }
    }
    // Every room gets a public row and a row only alice may read; then one of alice's rows moves to bob.
    const created: Array<{ id: string; room: string; owner: 'public' | 'alice' }> = [];
    for (const room of rooms) {
      created.push({
        id: await createRow(t, 'Chat', { room, ACL: { '*': { read: true } } }),
        room,
        owner: 'public',
      });
      created.push({
        id: await createRow(t, 'Chat', { room, ACL: { [alice.id]: { read: true } } }),
        room,
        owner: 'alice',
      });
    }
    const [fa, fb, fm] = await flush(t, a, b, m);
    const expected = (who: 'alice' | 'bob' | 'master') =>
      created
        .filter((r) => who !== 'bob' || r.owner === 'public')
        .map((r) => `create ${r.room} ${r.id} ${r.room}`);
    expect(events(fa!)).toEqual(expected('alice'));
    expect(events(fb!)).toEqual(expected('bob'));
    expect(events(fm!)).toEqual(expected('master'));

    // Alice's row in x1 moves to x3 and becomes bob's: alice sees it leave x1 (no longer readable:
    // bare object); bob sees it enter x3; master sees leave x1 and enter x3.
    const moved = created.find((r) => r.room === 'x1' && r.owner === 'alice')!;
    await update(moved.id, { room: 'x3', ACL: { [bob.id]: { read: true } } });
    const [ga, gb, gm] = await flush(t, a, b, m);
    expect(ga!.map((f) => `${f.op} ${f.requestId}`)).toEqual(['leave x1']);
    expect(ga![0].object).toEqual({ className: 'Chat', objectId: moved.id });
    expect(events(gb!)).toEqual([`enter x3 ${moved.id} x3`]);
    expect(events(gm!)).toEqual([`leave x1 ${moved.id} x3`, `enter x3 ${moved.id} x3`]);

    const res = await t.request('DELETE', `/classes/Chat/${moved.id}`, { as: 'master' });
    expect(res.status).toBe(200);
    const [ha, hb, hm] = await flush(t, a, b, m);
    expect(events(ha!)).toEqual([]);
    expect(events(hb!)).toEqual([`delete x3 ${moved.id} x3`]);
    expect(events(hm!)).toEqual([`delete x3 ${moved.id} x3`]);

    // The trace counts the subscriptions not decided in full with the reason the full decision gives.
    const trace = await t.request('GET', '/live/trace/Chat', { as: 'master' });
    const last = trace.json.results.at(-1);
    expect(last).toMatchObject({ op: 'delete', objectId: moved.id, delivered: 2 });
    // 15 room subscriptions: 2 deliveries; alice's 5 fail the ACL; bob's 4 other rooms and master's 4 fail the where.
    expect(last.filtered).toEqual({ where: 8, acl: 5, clp: 0, kind: 0, session: 0, cloud: 0 });
    for (const c of [a, b, m]) c.close();
  });

  it('past the trace list (500), the subscriptions not decided are counted by reason, as the full decision gives', async () => {
    await createClass(t, 'Crowd', { room: { type: 'Number' } });
    const clients = await Promise.all(
      [
        alice,
        alice,
        alice,
        alice,
        alice,
        'anonymous',
        'anonymous',
        'anonymous',
        'anonymous',
        'anonymous',
      ].map((who) => client(who as TestUser | 'anonymous')),
    );
    // 600 subscriptions (60 per connection), 60 per room (30 of alice's, 30 anonymous).
    await Promise.all(
      clients.map(async (c) => {
        for (let i = 0; i < 60; i++) {
          c.send({ op: 'subscribe', requestId: i, query: { className: 'Crowd', where: { room: i % 10 } } });
        }
        for (let i = 0; i < 60; i++) expect((await c.take()).op).toBe('subscribed');
      }),
    );
    const expectTrace = async (id: string) => {
      const frames = await flush(t, ...clients);
      // Alice's 30 subscriptions on room 3 receive it; nothing else does.
      expect(frames.flat().map((f) => `${f.op} ${f.requestId % 10}`)).toEqual(Array(30).fill('create 3'));
      const trace = await t.request('GET', '/live/trace/Crowd', { as: 'master' });
      const entry = trace.json.results.at(-1);
      expect(entry).toMatchObject({ objectId: id, subscriptions: 600, delivered: 30, omitted: 100 });
      // Anonymous may not read it (300: ACL); alice's on other rooms: where (270).
      expect(entry.filtered).toEqual({ where: 270, acl: 300, clp: 0, kind: 0, session: 0, cloud: 0 });
      expect(entry.deliveries).toHaveLength(500);
    };
    // The first event decides every subscription in full (they were never seen current); the next ones do not.
    await expectTrace(await createRow(t, 'Crowd', { room: 3, ACL: { [alice.id]: { read: true } } }));
    await expectTrace(await createRow(t, 'Crowd', { room: 3, ACL: { [alice.id]: { read: true } } }));
    // After a role change every subscription is decided in full once (its caller resolved again): the same.
    const role = await t.request('POST', '/roles', {
      as: 'master',
      body: { name: 'Crowders', ACL: { '*': { read: true } } },
    });
    expect(role.status).toBe(201);
    await expectTrace(await createRow(t, 'Crowd', { room: 3, ACL: { [alice.id]: { read: true } } }));
    await expectTrace(await createRow(t, 'Crowd', { room: 3, ACL: { [alice.id]: { read: true } } }));
    for (const c of clients) c.close();
  });

  it('a subscription updated to another room moves in the index', async () => {
    const c = await client('anonymous');
    expect((await c.subscribe(1, { className: 'Chat', where: { room: 'm1' } })).op).toBe('subscribed');
    c.send({ op: 'update', requestId: 1, query: { className: 'Chat', where: { room: 'm2' } } });
    expect((await c.take()).op).toBe('subscribed');
    const first = await createRow(t, 'Chat', { room: 'm1' });
    const second = await createRow(t, 'Chat', { room: 'm2' });
    const [frames] = await flush(t, c);
    expect(events(frames!)).toEqual([`create 1 ${second} m2`]);
    expect(first).not.toBe(second);
    c.close();
  });
});
