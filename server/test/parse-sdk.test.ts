import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from './helpers/service.ts';

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

/**
 * The stock `parse` SDK (v8) against the service, unchanged: it sends every call as a text/plain
 * POST with `_method`, `_ApplicationId`, `_JavaScriptKey` (or `_MasterKey`) and `_InstallationId`
 * in the body, and X-Parse- headers.
 */

describe('the stock Parse JS SDK', () => {
  let t: TestService;
  let alice: ParseSDK.Object;
  let bob: ParseSDK.Object;

  beforeAll(async () => {
    t = await startService();
    Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
    Parse.serverURL = t.url;
    // One attempt: a failure must show up as a failure, not as a slow retry.
    Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
    // Classes are made by the master key (allowClientClassCreation is off by default).
    for (const [className, fields] of [
      ['Player', { name: { type: 'String' }, level: { type: 'Number' } }],
      [
        'GameScore',
        {
          score: { type: 'Number' },
          playerName: { type: 'String' },
          tags: { type: 'Array' },
          player: { type: 'Pointer', targetClass: 'Player' },
        },
      ],
    ] as const) {
      const res = await t.request('POST', `/schemas/${className}`, {
        as: 'master',
        body: { className, fields },
      });
      expect(res.status, res.text).toBe(200);
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  it('creates with ParseObject.save and reads it back with Query.get', async () => {
    alice = new Parse.Object('Player');
    alice.set('name', 'alice');
    alice.set('level', 3);
    await alice.save();
    expect(alice.id).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(alice.createdAt).toBeInstanceOf(Date);

    bob = new Parse.Object('Player', { name: 'bob', level: 7 });
    await bob.save();

    const got = await new Parse.Query('Player').get(alice.id!);
    expect(got.id).toBe(alice.id);
    expect(got.get('name')).toBe('alice');
    expect(got.get('level')).toBe(3);
    expect(got.createdAt?.toISOString()).toBe(alice.createdAt?.toISOString());

    // The row is really there, as the REST API sees it.
    const rest = await t.request('GET', `/classes/Player/${alice.id}`, { as: 'rest' });
    expect(rest.status).toBe(200);
    expect(rest.json).toMatchObject({ name: 'alice', level: 3 });
  });

  it('saves many objects (saveAll goes through /batch with the mount path in each path)', async () => {
    const scores = [10, 20, 30, 40, 50].map((score, i) => {
      const o = new Parse.Object('GameScore');
      o.set('score', score);
      o.set('playerName', i % 2 === 0 ? 'alice' : 'bob');
      o.set('tags', i < 2 ? ['early'] : ['late']);
      o.set('player', i % 2 === 0 ? alice : bob);
      return o;
    });
    await Parse.Object.saveAll(scores);
    for (const s of scores) expect(s.id).toMatch(/^[A-Za-z0-9]{10}$/);
    const count = await t.request('GET', '/classes/GameScore', {
      as: 'master',
      query: { count: 1, limit: 0 },
    });
    expect(count.json.count).toBe(5);
  });

  it('finds with equalTo, greaterThan, containedIn, include, ascending and limit', async () => {
    const q = new Parse.Query('GameScore');
    q.greaterThan('score', 10);
    q.containedIn('playerName', ['alice', 'bob']);
    q.include('player');
    q.ascending('score');
    q.limit(3);
    const results = await q.find();
    expect(results.map((r) => r.get('score'))).toEqual([20, 30, 40]);
    const player = results[0]!.get('player') as ParseSDK.Object;
    expect(player).toBeInstanceOf(Parse.Object);
    expect(player.id).toBe(bob.id);
    expect(player.get('name')).toBe('bob'); // included, not just a pointer

    const eq = new Parse.Query('GameScore');
    eq.equalTo('playerName', 'alice');
    eq.descending('score');
    expect((await eq.find()).map((r) => r.get('score'))).toEqual([50, 30, 10]);

    const byPointer = new Parse.Query('GameScore');
    byPointer.equalTo('player', alice);
    byPointer.equalTo('tags', 'late');
    byPointer.ascending('score');
    expect((await byPointer.find()).map((r) => r.get('score'))).toEqual([30, 50]);

    const first = await new Parse.Query('GameScore').ascending('score').first();
    expect(first?.get('score')).toBe(10);
    const none = await new Parse.Query('GameScore').equalTo('playerName', 'nobody').first();
    expect(none).toBeUndefined();
  });

  it('counts', async () => {
    expect(await new Parse.Query('GameScore').count()).toBe(5);
    const q = new Parse.Query('GameScore');
    q.greaterThanOrEqualTo('score', 30);
    expect(await q.count()).toBe(3);
  });

  it('updates with set and increment', async () => {
    const score = await new Parse.Query('GameScore').equalTo('score', 10).first();
    expect(score).toBeDefined();
    score!.set('playerName', 'carol');
    score!.increment('score', 5);
    await score!.save();
    expect(score!.get('score')).toBe(15);
    expect(score!.updatedAt).toBeInstanceOf(Date);

    const fresh = await new Parse.Query('GameScore').get(score!.id!);
    expect(fresh.get('score')).toBe(15);
    expect(fresh.get('playerName')).toBe('carol');

    // Increment is applied by the service, not computed by the client.
    const a = await new Parse.Query('GameScore').get(score!.id!);
    const b = await new Parse.Query('GameScore').get(score!.id!);
    a.increment('score', 1);
    b.increment('score', 1);
    await Promise.all([a.save(), b.save()]);
    expect((await new Parse.Query('GameScore').get(score!.id!)).get('score')).toBe(17);

    // fetch() reloads.
    await score!.fetch();
    expect(score!.get('score')).toBe(17);
  });

  it('deletes with destroy', async () => {
    const doomed = await new Parse.Query('GameScore').equalTo('score', 40).first();
    expect(doomed).toBeDefined();
    const id = doomed!.id!;
    await doomed!.destroy();
    await expect(new Parse.Query('GameScore').get(id)).rejects.toMatchObject({ code: 101 });
    const rest = await t.request('GET', `/classes/GameScore/${id}`, { as: 'master' });
    expect(rest.status).toBe(404);
    expect(await new Parse.Query('GameScore').count()).toBe(4);
  });

  it('uses the master key with {useMasterKey: true}', async () => {
    // Without the master key the client may not create a class ...
    const secret = new Parse.Object('Secret');
    secret.set('code', 42);
    await expect(secret.save()).rejects.toMatchObject({ code: 119 });
    let schema = await t.request('GET', '/schemas/Secret', { as: 'master' });
    expect(schema.status).not.toBe(200);

    // ... with it, it may.
    await secret.save(null, { useMasterKey: true });
    expect(secret.id).toMatch(/^[A-Za-z0-9]{10}$/);
    schema = await t.request('GET', '/schemas/Secret', { as: 'master' });
    expect(schema.status, schema.text).toBe(200);
    const found = await new Parse.Query('Secret').find({ useMasterKey: true });
    expect(found.map((o) => o.get('code'))).toEqual([42]);
  });

  it('surfaces protocol errors as ParseError with the code', async () => {
    const q = new Parse.Query('GameScore');
    q.include('player.a.b.c.d.e.f.g.h.i.j');
    await expect(q.find()).rejects.toMatchObject({ code: 102 });
    await expect(new Parse.Query('GameScore').get('nosuchid00')).rejects.toMatchObject({ code: 101 });
  });

  it('is refused with a wrong JavaScript key', async () => {
    Parse.initialize(KEYS.appId, 'wrong-js-key', KEYS.masterKey);
    try {
      await expect(new Parse.Query('GameScore').count()).rejects.toMatchObject({ code: 119 });
    } finally {
      Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
      Parse.serverURL = t.url;
    }
    expect(await new Parse.Query('GameScore').count()).toBe(4);
  });
});
