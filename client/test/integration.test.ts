import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { KEYS, startService, type TestService } from '../../server/test/helpers/service.ts';
import {
  ArgumentError,
  AuthenticationError,
  BdsObject,
  type ClientOptions,
  createClient,
  currentSessionToken,
  currentUser,
  destroyAll,
  InvalidSessionError,
  type LogEntry,
  login,
  logout,
  ProtocolError,
  Role,
  resetVersionWarning,
  saveAll,
  setClientMode,
  User,
  withCacheTenant,
  withScope,
  withSession,
} from '../src/index.node.ts';

let svc: TestService;
let log: LogEntry[];

function options(extra: Partial<ClientOptions> = {}): ClientOptions {
  return {
    serverURL: svc.url,
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    logger: (e) => log.push(e),
    ...extra,
  };
}
const masterClient = (extra: Partial<ClientOptions> = {}) =>
  createClient(options({ masterKey: KEYS.masterKey, ...extra }));
const publicClient = (extra: Partial<ClientOptions> = {}) =>
  createClient(options({ masterKey: null, ...extra }));

let counter = 0;
async function newUser(password = 'secret-pw') {
  const username = `user${++counter}_${Date.now()}`;
  const user = await User.signUp(publicClient(), { username, password, email: `${username}@example.com` });
  return { user, username, password, token: user.sessionToken! };
}

beforeAll(async () => {
  svc = await startService();
  const m = masterClient({ logger: undefined });
  // Classes are created by the master key (allowClientClassCreation is off).
  for (const cls of ['Note', 'Item', 'Cached']) {
    const res = await m.create(cls, { seed: true }, { useMasterKey: true });
    expect(res.success).toBe(true);
  }
});

afterAll(async () => {
  await svc?.close();
});

afterEach(() => {
  setClientMode(false);
  log = [];
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});
log = [];

const sentHeader = (e: LogEntry, name: string) => name in e.headers;

describe('client mode (1) and master preference (3)', () => {
  it('sends the master key by default, and none in client mode', async () => {
    const m = masterClient();
    const hidden = await m.create('Note', { text: 'private', ACL: {} }, { useMasterKey: true });
    expect(hidden.success).toBe(true);
    const id = (hidden as any).data.objectId;

    log = [];
    const asMaster = await m.get('Note', id);
    expect(asMaster.success).toBe(true);
    expect(sentHeader(log[0]!, 'X-Backend-Master-Key')).toBe(true);

    setClientMode(true);
    log = [];
    const inClientMode = await m.get('Note', id, { useMasterKey: true });
    expect(inClientMode).toMatchObject({ success: false, code: 101 });
    expect(sentHeader(log[0]!, 'X-Backend-Master-Key')).toBe(false);
    await expect(m.request('GET', '/schemas')).rejects.toBeInstanceOf(AuthenticationError);
  });

  it('honours an ambient session over the default master key; useMasterKey: true forces it', async () => {
    const { token } = await newUser();
    const m = masterClient();
    const hidden = await m.create('Note', { text: 'private', ACL: {} });
    const id = (hidden as any).data.objectId;
    await withSession(token, async () => {
      log = [];
      expect(await m.get('Note', id)).toMatchObject({ success: false, code: 101 });
      expect(sentHeader(log[0]!, 'X-Backend-Master-Key')).toBe(false);
      expect(log[0]!.headers['X-Backend-Session-Token']).toBe('[FILTERED]');
      expect((await m.get('Note', id, { useMasterKey: true })).success).toBe(true);
    });
  });
});

describe('credential resolution (2) and user-scoped clients (4)', () => {
  it('explicit > ambient > bound', async () => {
    const a = await newUser();
    const b = await newUser();
    const c = await newUser();
    const bound = publicClient().withSessionToken(c.token);
    expect((await bound.me()) as any).toMatchObject({ data: { username: c.username } });
    await withSession(b.token, async () => {
      expect(((await bound.me()) as any).data.username).toBe(b.username);
      expect(((await bound.me({ sessionToken: a.token })) as any).data.username).toBe(a.username);
    });
  });

  it('a blank explicit token is sent anonymously and never falls through', async () => {
    const a = await newUser();
    const m = masterClient().withSessionToken(a.token);
    await withSession(a.token, async () => {
      log = [];
      const res = await m.find('Note', {}, { sessionToken: '' });
      expect(res.success).toBe(true);
      expect(sentHeader(log[0]!, 'X-Backend-Session-Token')).toBe(false);
      expect(sentHeader(log[0]!, 'X-Backend-Master-Key')).toBe(false);
    });
  });

  it('a call with a session token never sends the master key', async () => {
    const a = await newUser();
    log = [];
    await masterClient().find('Note', {}, { sessionToken: a.token, useMasterKey: true });
    expect(sentHeader(log[0]!, 'X-Backend-Master-Key')).toBe(false);
    expect(sentHeader(log[0]!, 'X-Backend-Session-Token')).toBe(true);
  });

  it('user.client() acts as the user; null without a token', async () => {
    const a = await newUser();
    const loggedIn = await User.logIn(publicClient(), a.username, a.password);
    const scoped = loggedIn!.client()!;
    expect(((await scoped.me()) as any).data.objectId).toBe(a.user.id);
    expect(new User(publicClient(), { objectId: a.user.id }).client()).toBeNull();
  });
});

describe('auth as direct options (5)', () => {
  it('rejects nested opts without sending a request', async () => {
    const a = await newUser();
    log = [];
    await expect(publicClient().me({ opts: { sessionToken: a.token } } as any)).rejects.toThrow(
      /direct options \(sessionToken, useMasterKey\)/,
    );
    await expect(
      new BdsObject(publicClient(), 'Note', { t: 1 }).save({ opts: {} } as any),
    ).rejects.toBeInstanceOf(ArgumentError);
    expect(log).toHaveLength(0);
  });
});

describe('login and signup results (6)', () => {
  it('User.logIn answers null; raw login answers the server text', async () => {
    const a = await newUser();
    const c = publicClient();
    expect(await User.logIn(c, a.username, 'wrong')).toBeNull();
    const raw = await c.login(a.username, 'wrong');
    expect(raw).toMatchObject({ success: false, code: 101, error: 'Invalid username/password.' });
    const ok = await User.logIn(c, a.username, a.password);
    expect(ok?.sessionToken).toMatch(/^r:/);
  });

  it('save of a new user answers false with errors; signUp throws', async () => {
    const a = await newUser();
    const dup = new User(publicClient(), { username: a.username, password: 'x' });
    expect(await dup.save()).toBe(false);
    expect(dup.errors[0]).toMatch(/username/i);
    await expect(User.signUp(publicClient(), { username: a.username, password: 'x' })).rejects.toBeInstanceOf(
      ProtocolError,
    );
    const fresh = new User(publicClient(), { username: `fresh${Date.now()}`, password: 'pw' });
    expect(await fresh.save()).toBe(true);
    expect(fresh.sessionToken).toMatch(/^r:/);
    expect(fresh.get('password')).toBeUndefined();
  });
});

describe('roles (7)', () => {
  async function setup(suffix: string) {
    const m = masterClient();
    const lower = new Role(m, { name: `Lower${suffix}`, ACL: { '*': { read: true } } });
    const upper = new Role(m, { name: `Upper${suffix}`, ACL: { '*': { read: true } } });
    expect(await lower.save()).toBe(true);
    const member = await newUser();
    upper.addUsers(member.user);
    expect(await upper.save()).toBe(true);
    const row = await m.create('Note', {
      text: 'lower only',
      ACL: { [`role:Lower${suffix}`]: { read: true } },
    });
    const id = (row as any).data.objectId as string;
    const canRead = async () => (await m.get('Note', id, { sessionToken: member.token })).success;
    expect(await canRead()).toBe(false);
    return { m, lower, upper, canRead };
  }

  it('inheritsCapabilitiesFromAndSave gives the inheriting role the other role capabilities', async () => {
    const { lower, upper, canRead } = await setup('A');
    expect(await upper.inheritsCapabilitiesFromAndSave(lower)).toBe(true);
    expect(await canRead()).toBe(true);
  });

  it('grantCapabilitiesToAndSave works in the stated direction', async () => {
    const { lower, upper, canRead } = await setup('B');
    expect(await lower.grantCapabilitiesToAndSave(upper)).toBe(true);
    expect(await canRead()).toBe(true);
  });

  it('addChildRole works in the opposite direction (kept for compatibility)', async () => {
    const { lower, upper, canRead } = await setup('C');
    expect(await upper.addChildRole(lower).save()).toBe(true);
    expect(await canRead()).toBe(false);
    const { lower: l2, upper: u2, canRead: read2 } = await setup('D');
    expect(await l2.addChildRole(u2).save()).toBe(true);
    expect(await read2()).toBe(true);
  });

  it('pointing a role at itself is an argument error', async () => {
    const { lower } = await setup('E');
    expect(() => lower.inheritsCapabilitiesFrom(lower)).toThrow(ArgumentError);
  });
});

describe('imperative login/logout (8)', () => {
  it('stores token and user in the scope; logout revokes', async () => {
    const a = await newUser();
    const c = publicClient();
    await withScope(async () => {
      expect(await login(c, a.username, 'bad')).toBeNull();
      expect(currentSessionToken()).toBeUndefined();
      const user = await login(c, a.username, a.password);
      const token = currentSessionToken()!;
      expect(token).toBe(user!.sessionToken);
      expect(currentUser()?.id).toBe(a.user.id);
      expect(((await c.me()) as any).data.objectId).toBe(a.user.id);
      await logout(c);
      expect(currentSessionToken()).toBeUndefined();
      expect(currentUser()).toBeNull();
      await expect(c.me({ sessionToken: token })).rejects.toBeInstanceOf(InvalidSessionError);
    });
    expect(currentSessionToken()).toBeUndefined();
  });

  it('logout({revoke: false}) keeps the token valid', async () => {
    const a = await newUser();
    const c = publicClient();
    await withScope(async () => {
      await login(c, a.username, a.password);
      const token = currentSessionToken()!;
      await logout(c, { revoke: false });
      expect(((await c.me({ sessionToken: token })) as any).success).toBe(true);
    });
  });
});

describe('anonymous users (9)', () => {
  it('signs up anonymously and upgrades in one request', async () => {
    const c = publicClient();
    const anon = await User.logInAnonymously(c);
    expect(anon.isAnonymous).toBe(true);
    const oldToken = anon.sessionToken!;
    const username = `upgraded${Date.now()}`;
    log = [];
    expect(
      await anon.upgradeAnonymous({ username, password: 'pw-1', email: `${username}@example.com` }),
    ).toBe(true);
    expect(log).toHaveLength(1);
    expect(log[0]!.method).toBe('PUT');
    expect(anon.sessionToken).toMatch(/^r:/);
    expect(anon.sessionToken).not.toBe(oldToken);
    expect(anon.get('password')).toBeUndefined();
    expect(anon.isAnonymous).toBe(false);
    await expect(c.me({ sessionToken: oldToken })).rejects.toBeInstanceOf(InvalidSessionError);
    expect(await User.logIn(c, username, 'pw-1')).not.toBeNull();
    log = [];
    await expect(anon.upgradeAnonymous({ username: 'x', password: 'y' })).rejects.toBeInstanceOf(
      AuthenticationError,
    );
    expect(log).toHaveLength(0);
  });
});

describe('errors (10)', () => {
  it('throws for HTTP-level failures and returns protocol errors', async () => {
    await expect(
      createClient({ serverURL: svc.url, applicationId: 'wrong', restAPIKey: 'x' }).find('Note'),
    ).rejects.toMatchObject({ name: 'AuthenticationError', status: 403, code: 119 });
    await expect(publicClient().me({ sessionToken: 'r:bogus' })).rejects.toBeInstanceOf(InvalidSessionError);
    const missing = await masterClient().get('Note', 'doesNotExt');
    expect(missing).toEqual({ success: false, status: 404, code: 101, error: 'Object not found.' });
    const bad = await masterClient().create('Note', { '1bad': 1 });
    expect(bad).toMatchObject({ success: false, status: 400, code: 105 });
    await expect(
      createClient({ serverURL: 'http://127.0.0.1:9/api', applicationId: 'a' }).find('Note'),
    ).rejects.toMatchObject({ name: 'ConnectionError' });
  });
});

describe('push (11) and analytics (12)', () => {
  it('refuses push locally without a master key', async () => {
    log = [];
    await expect(publicClient().sendPush({ data: { alert: 'x' } }, { useMasterKey: true })).rejects.toThrow(
      /requires master key/,
    );
    expect(log).toHaveLength(0);
  });

  it('tracks valid events and refuses bad names locally', async () => {
    const c = publicClient();
    expect(await c.trackEvent('app.open-v2', { source: 'test' }, new Date())).toMatchObject({
      success: true,
    });
    log = [];
    await expect(c.trackEvent('bad name')).rejects.toBeInstanceOf(ArgumentError);
    expect(log).toHaveLength(0);
  });
});

describe('batch (13)', () => {
  it('saves and destroys in segments of 50 mapping results back', async () => {
    const m = masterClient();
    const items = Array.from({ length: 120 }, (_, i) => new BdsObject(m, 'Item', { n: i }));
    log = [];
    expect(await saveAll(m, items)).toBe(true);
    expect(log.filter((e) => e.path === '/batch')).toHaveLength(3);
    expect(items.every((o) => /^[A-Za-z0-9]{10}$/.test(o.id!))).toBe(true);
    const fetched = await m.get('Item', items[77]!.id!);
    expect((fetched as any).data.n).toBe(77);

    items[5]!.set('n', 'not a number');
    items[6]!.set('n', 1006);
    expect(await saveAll(m, items.slice(0, 10))).toBe(false);
    expect(items[5]!.lastFailure?.code).toBe(111);
    expect(items[6]!.errors).toEqual([]);

    log = [];
    expect(await destroyAll(m, items)).toBe(true);
    expect(log.filter((e) => e.path === '/batch')).toHaveLength(3);
    expect((await m.get('Item', items[0]!.id!)).success).toBe(false);
  });
});

describe('request logging with scrub (16)', () => {
  it('logs method, path, status, code and objectId with secrets filtered', async () => {
    const username = `logged${Date.now()}`;
    const c = publicClient();
    log = [];
    await User.signUp(c, { username, password: 'top-secret', email: `${username}@example.com` });
    const entry = log[0]!;
    expect(entry).toMatchObject({ method: 'POST', path: '/users', status: 201 });
    expect(entry.objectId).toMatch(/^[A-Za-z0-9]{10}$/);
    expect((entry.body as any).password).toBe('[FILTERED]');
    expect((entry.body as any).email).toBe(`${username}@example.com`);
    expect((entry.response as any).sessionToken).toBe('[FILTERED]');
    expect(entry.headers['X-Backend-REST-API-Key']).toBe('[FILTERED]');
    expect(entry.headers['X-Backend-Application-Id']).toBe(KEYS.appId);
    expect(JSON.stringify(log)).not.toContain('top-secret');
    log = [];
    await c.login(username, 'nope');
    expect(log[0]).toMatchObject({ status: 404, code: 101 });
  });
});

describe('response cache (17)', () => {
  it('caches reads per auth and tenant; writes invalidate the class', async () => {
    const m = masterClient({ cache: true });
    const a = await newUser();
    log = [];
    const first = await m.find('Cached');
    const second = await m.find('Cached');
    expect(second).toEqual(first);
    expect(log).toHaveLength(1);

    await withSession(a.token, () => m.find('Cached'));
    expect(log).toHaveLength(2);
    await withCacheTenant('tenant-1', () => m.find('Cached'));
    expect(log).toHaveLength(3);
    await withCacheTenant('tenant-1', () => m.find('Cached'));
    expect(log).toHaveLength(3);

    await m.create('Cached', { x: 1 });
    const after = await m.find('Cached');
    expect(log).toHaveLength(5);
    expect((after as any).data.results.length).toBe((first as any).data.results.length + 1);
    expect(() => withCacheTenant('a:b', () => m.find('Cached'))).toThrow(ArgumentError);
  });

  it('is off unless asked for', async () => {
    const m = masterClient();
    log = [];
    await m.find('Cached');
    await m.find('Cached');
    expect(log).toHaveLength(2);
  });
});

describe('versioning (18)', () => {
  it('probes features over /serverInfo', async () => {
    const c = publicClient();
    expect(await c.serverSupports('batch.transaction')).toBe(true);
    expect(await c.serverSupports('liveQuery')).toBe(true);
    expect(await c.serverSupports('noSuchFeature')).toBe(false);
    expect(await c.serverFeatures()).toMatchObject({ users: true });
  });

  it('assumes a modern server when information is unavailable', async () => {
    const c = createClient({ serverURL: 'http://127.0.0.1:9/api', applicationId: 'a' });
    expect(await c.serverSupports('anything.at.all')).toBe(true);
    expect(await c.serverFeatures()).toEqual({});
  });

  it('warns once about an outdated server unless silenced', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    resetVersionWarning();
    await publicClient({ minimumServerVersion: '99.0.0', silenceVersionWarning: true }).serverInfo();
    vi.stubEnv('BDS_SILENCE_VERSION_WARNING', '1');
    await publicClient({ minimumServerVersion: '99.0.0' }).serverInfo();
    expect(warn).not.toHaveBeenCalled();
    vi.unstubAllEnvs();
    await publicClient({ minimumServerVersion: '99.0.0' }).serverInfo();
    await publicClient({ minimumServerVersion: '99.0.0' }).serverInfo();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/older than 99\.0\.0/);
    await publicClient().serverInfo();
    expect(warn).toHaveBeenCalledTimes(1);
  });
});
