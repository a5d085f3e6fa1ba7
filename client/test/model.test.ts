import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from '../../server/test/helpers/service.ts';
import {
  ACL_POLICIES,
  ArgumentError,
  aclFor,
  camelCase,
  createClient,
  defineModel,
  type ModelRecord,
  User,
} from '../src/index.node.ts';

describe('models, local (14)', () => {
  const client = createClient({ serverURL: 'http://127.0.0.1:9/api', applicationId: 'a' });

  it('sends snake_case properties in camelCase and checks types', () => {
    const Song = defineModel({
      className: 'UnitSong',
      properties: {
        title: 'string',
        play_count: 'integer',
        rating: 'float',
        released_at: 'date',
        tags: 'array',
      },
    });
    const s = Song.create(client, {
      title: 'x',
      play_count: 3,
      released_at: new Date('2026-01-02T03:04:05.000Z'),
    });
    expect(camelCase('released_at')).toBe('releasedAt');
    expect(s.changes()).toEqual({
      title: 'x',
      playCount: 3,
      releasedAt: { __type: 'Date', iso: '2026-01-02T03:04:05.000Z' },
    });
    expect(s.get('released_at')).toBeInstanceOf(Date);
    expect(s.get('playCount')).toBe(3);
    expect(() => s.set('play_count', 1.5)).toThrow(ArgumentError);
    expect(() => s.set('title', 5)).toThrow(ArgumentError);
    expect(() => s.set('tags', 'no')).toThrow(ArgumentError);
    s.set('location', { latitude: 1, longitude: 2 });
  });

  it('fails validate when an association target resolves to no class', async () => {
    const Orphan = defineModel({ className: 'UnitOrphan', belongsTo: { parent_thing: 'NoSuchModel' } });
    expect(() => Orphan.validate()).toThrow(/resolves to no class/);
    await expect(Orphan.create(client).save()).rejects.toBeInstanceOf(ArgumentError);
    const Ok = defineModel({ className: 'UnitOk', belongsTo: { owner: '_User' } });
    expect(() => Ok.validate()).not.toThrow();
  });

  it('stamps ACLs exactly per the policy table and refuses unknown policies', () => {
    expect(ACL_POLICIES).toHaveLength(6);
    const rw = { read: true, write: true };
    expect(aclFor('public')).toEqual({ '*': rw });
    expect(aclFor('public_read')).toEqual({ '*': { read: true } });
    expect(aclFor('private', 'u1')).toEqual({});
    expect(aclFor('owner_else_private', 'u1')).toEqual({ u1: rw });
    expect(aclFor('owner_else_private')).toEqual({});
    expect(aclFor('owner_else_public', 'u1')).toEqual({ u1: rw });
    expect(aclFor('owner_else_public')).toEqual({ '*': rw });
    expect(aclFor('owner_but_public_read', 'u1')).toEqual({ u1: rw, '*': { read: true } });
    expect(aclFor('owner_but_public_read')).toEqual({ '*': { read: true } });
    expect(() => defineModel({ className: 'UnitBad', aclPolicy: 'everyone' as any })).toThrow(ArgumentError);
    expect(() => aclFor('nope' as any)).toThrow(ArgumentError);
  });
});

describe('models against the service (14, 15)', () => {
  let svc: TestService;
  let master: ReturnType<typeof createClient>;
  let pub: ReturnType<typeof createClient>;

  beforeAll(async () => {
    svc = await startService();
    master = createClient({
      serverURL: svc.url,
      applicationId: KEYS.appId,
      restAPIKey: KEYS.restAPIKey,
      masterKey: KEYS.masterKey,
    });
    pub = createClient({
      serverURL: svc.url,
      applicationId: KEYS.appId,
      restAPIKey: KEYS.restAPIKey,
      masterKey: null,
    });
    for (const cls of ['Artist', 'Track', 'Album', 'Memo']) await master.create(cls, { seed: true });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const signUp = (name: string) =>
    User.signUp(pub, {
      username: `${name}${Date.now()}${Math.random().toString(36).slice(2, 6)}`,
      password: 'pw',
    });

  it('saves typed properties in camelCase, pointers, and has-many associations', async () => {
    const Artist = defineModel({
      className: 'Artist',
      properties: { stage_name: 'string' },
      hasMany: { tracks: { className: 'Track', inverse: 'artist' } },
      aclPolicy: 'public',
    });
    const Track = defineModel({
      className: 'Track',
      properties: { play_count: 'integer', released_at: 'date' },
      belongsTo: { artist: 'Artist' },
      aclPolicy: 'public',
    });
    const Album = defineModel({
      className: 'Album',
      hasMany: { track_list: { className: 'Track', through: 'relation' } },
      aclPolicy: 'public',
    });
    const artist = Artist.create(master, { stage_name: 'Nova' });
    expect(await artist.save()).toBe(true);
    const tracks: ModelRecord[] = [];
    for (let i = 0; i < 3; i++) {
      const t = Track.create(master, { play_count: i, artist, released_at: new Date() });
      expect(await t.save()).toBe(true);
      tracks.push(t);
    }
    const raw = (await master.get('Track', tracks[1]!.id!)) as any;
    expect(raw.data.playCount).toBe(1);
    expect(raw.data.artist).toMatchObject({ __type: 'Pointer', className: 'Artist', objectId: artist.id });
    expect(raw.data.releasedAt.__type).toBe('Date');

    expect((await artist.fetchMany('tracks'))!.map((r) => r.playCount).sort()).toEqual([0, 1, 2]);

    const album = Album.create(master);
    expect(await album.save()).toBe(true);
    album.addTo('track_list', tracks[0]!, tracks[2]!);
    expect(await album.save()).toBe(true);
    expect((await album.fetchMany('track_list'))!.map((r) => r.objectId).sort()).toEqual(
      [tracks[0]!.id, tracks[2]!.id].sort(),
    );
    const found = await Track.find(master, { where: { artist: artist.toPointer() } });
    expect(found).toHaveLength(3);
  });

  it('stamps the default ACL policy on create; an explicit ACL wins', async () => {
    const owner = await signUp('owner');
    const other = await signUp('other');
    const Memo = defineModel({
      className: 'Memo',
      properties: { text: 'string' },
      belongsTo: { owner: '_User' },
    });
    const mine = Memo.create(master, { text: 'mine', owner });
    expect(await mine.save()).toBe(true);
    expect(mine.get('ACL')).toEqual({ [owner.id!]: { read: true, write: true } });
    expect((await pub.get('Memo', mine.id!, { sessionToken: owner.sessionToken })).success).toBe(true);
    expect((await pub.get('Memo', mine.id!, { sessionToken: other.sessionToken })).success).toBe(false);

    const orphan = Memo.create(master, { text: 'no owner' });
    expect(await orphan.save()).toBe(true);
    expect(((await master.get('Memo', orphan.id!)) as any).data.ACL).toEqual({});

    const PublicRead = defineModel({
      className: 'Memo',
      aclPolicy: 'owner_but_public_read',
      belongsTo: { owner: '_User' },
    });
    const shared = PublicRead.create(master, { text: 'shared', owner });
    expect(await shared.save()).toBe(true);
    expect((await pub.get('Memo', shared.id!, { sessionToken: other.sessionToken })).success).toBe(true);

    const explicit = Memo.create(master, { text: 'explicit', owner, ACL: { '*': { read: true } } });
    expect(await explicit.save()).toBe(true);
    expect(explicit.get('ACL')).toEqual({ '*': { read: true } });
  });

  it('runs client callbacks in this process only, around saves made here', async () => {
    const calls: string[] = [];
    const Memo = defineModel({
      className: 'Memo',
      aclPolicy: 'public',
      beforeSave: (r) => {
        calls.push(`before:${r.isNew}`);
        r.set('stamped', true);
      },
      afterSave: (r) => {
        calls.push(`after:${r.id}`);
      },
    });
    const memo = Memo.create(master, { text: 'cb' });
    expect(await memo.save()).toBe(true);
    expect(calls).toEqual(['before:true', `after:${memo.id}`]);
    expect(((await master.get('Memo', memo.id!)) as any).data.stamped).toBe(true);
    // A write that does not go through the model (raw REST) runs no callback.
    await master.update('Memo', memo.id!, { text: 'raw' });
    expect(calls).toHaveLength(2);
  });
});
