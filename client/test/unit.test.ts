import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ArgumentError,
  AuthenticationError,
  BdsClientError,
  Client,
  checkAuthOptions,
  createClient,
  currentSessionToken,
  InvalidSessionError,
  isClientMode,
  Role,
  scrub,
  scrubHeaders,
  setClientMode,
  User,
  withCacheTenant,
  withScope,
  withSession,
} from '../src/index.node.ts';

const base = { serverURL: 'http://127.0.0.1:1/api', applicationId: 'app', restAPIKey: 'rest' };

function noNetwork() {
  const fetch = vi.fn(async () => {
    throw new Error('no request expected');
  });
  return { fetch: fetch as unknown as typeof globalThis.fetch, calls: fetch.mock.calls };
}

afterEach(() => {
  setClientMode(false);
  vi.unstubAllEnvs();
});

describe('client mode (1)', () => {
  it('never sends the master key in client mode', () => {
    const c = createClient({ ...base, masterKey: 'mk' });
    expect(c.headersFor(c.resolveAuth({}))['X-Backend-Master-Key']).toBe('mk');
    setClientMode(true);
    expect(isClientMode()).toBe(true);
    expect(c.headersFor(c.resolveAuth({ useMasterKey: true }))['X-Backend-Master-Key']).toBeUndefined();
    expect(c.headersFor({ kind: 'master' })['X-Backend-Master-Key']).toBeUndefined();
  });

  it('reads BDS_CLIENT_MODE=true from the environment', () => {
    const c = createClient({ ...base, masterKey: 'mk' });
    vi.stubEnv('BDS_CLIENT_MODE', 'true');
    setClientModeUnset();
    expect(isClientMode()).toBe(true);
    expect(c.resolveAuth({ useMasterKey: true })).toEqual({ kind: 'none' });
  });

  it('a client with masterKey: null has no master authority', () => {
    const c = createClient({ ...base, masterKey: null });
    expect(c.canUseMasterKey).toBe(false);
    expect(c.resolveAuth({ useMasterKey: true })).toEqual({ kind: 'none' });
  });

  it('requires serverURL and applicationId', () => {
    expect(() => createClient({ serverURL: '', applicationId: 'a' })).toThrow(ArgumentError);
    expect(() => createClient({ serverURL: 'http://x', applicationId: '' })).toThrow(ArgumentError);
  });
});

function setClientModeUnset() {
  // Passing undefined through a cast restores the "read the environment" state.
  setClientMode(undefined as unknown as boolean);
}

describe('credential resolution (2, 3)', () => {
  const master = createClient({ ...base, masterKey: 'mk' });
  const bound = master.withSessionToken('r:bound');

  it('explicit token wins over ambient and bound tokens, and never sends the master key too', () => {
    withSession('r:ambient', () => {
      const auth = bound.resolveAuth({ sessionToken: 'r:explicit', useMasterKey: true });
      expect(auth).toEqual({ kind: 'session', token: 'r:explicit' });
      const h = bound.headersFor(auth);
      expect(h['X-Backend-Session-Token']).toBe('r:explicit');
      expect(h['X-Backend-Master-Key']).toBeUndefined();
    });
  });

  it('useMasterKey: true wins over ambient and bound tokens', () => {
    withSession('r:ambient', () => {
      expect(bound.resolveAuth({ useMasterKey: true })).toEqual({ kind: 'master' });
    });
  });

  it('ambient beats bound; bound is the lowest', () => {
    withSession('r:ambient', () => {
      expect(bound.resolveAuth({})).toEqual({ kind: 'session', token: 'r:ambient' });
    });
    expect(bound.resolveAuth({})).toEqual({ kind: 'session', token: 'r:bound' });
  });

  it('a blank explicit token fails closed (anonymous)', () => {
    withSession('r:ambient', () => {
      for (const t of ['', '   ', null]) {
        expect(bound.resolveAuth({ sessionToken: t })).toEqual({ kind: 'none' });
      }
    });
  });

  it('master preference is tri-state: default master, client mode suppresses, false refuses', () => {
    expect(master.resolveAuth({})).toEqual({ kind: 'master' });
    expect(master.resolveAuth({ useMasterKey: false })).toEqual({ kind: 'none' });
    setClientMode(true);
    expect(master.resolveAuth({})).toEqual({ kind: 'none' });
  });

  it('ambient scopes nest and survive awaits', async () => {
    await withSession('r:outer', async () => {
      await new Promise((r) => setTimeout(r, 1));
      expect(currentSessionToken()).toBe('r:outer');
      await withSession('r:inner', async () => {
        await Promise.resolve();
        expect(currentSessionToken()).toBe('r:inner');
      });
      expect(currentSessionToken()).toBe('r:outer');
    });
    expect(currentSessionToken()).toBeUndefined();
  });
});

describe('user-scoped client (4)', () => {
  it('is null without a token', () => {
    const c = createClient(base);
    expect(new User(c, { objectId: 'u1', username: 'a' }).client()).toBeNull();
    const scoped = new User(c, { objectId: 'u1', sessionToken: 'r:x' }).client();
    expect(scoped).toBeInstanceOf(Client);
    expect(scoped!.sessionToken).toBe('r:x');
  });
});

describe('auth as direct options (5)', () => {
  it('rejects auth nested in opts, naming the direct options', async () => {
    const n = noNetwork();
    const c = createClient({ ...base, fetch: n.fetch });
    expect(() => checkAuthOptions({ opts: { sessionToken: 'r:x' } })).toThrow(/sessionToken, useMasterKey/);
    await expect(c.find('Thing', {}, { opts: { sessionToken: 'r:x' } } as any)).rejects.toBeInstanceOf(
      ArgumentError,
    );
    expect(n.calls).toHaveLength(0);
  });
});

describe('roles (7)', () => {
  it('refuses a role pointing at itself', () => {
    const c = createClient(base);
    const a = new Role(c, { objectId: 'r1', name: 'A' });
    expect(() => a.inheritsCapabilitiesFrom(a)).toThrow(ArgumentError);
    expect(() => a.grantCapabilitiesTo(new Role(c, { objectId: 'r1', name: 'A' }))).toThrow(ArgumentError);
    expect(() => a.addChildRole(a)).toThrow(ArgumentError);
  });

  it('stages the inheriting role into the inherited role relation', () => {
    const c = createClient(base);
    const a = new Role(c, { objectId: 'ra', name: 'A' });
    const b = new Role(c, { objectId: 'rb', name: 'B' });
    const pointerA = { __type: 'Pointer', className: '_Role', objectId: 'ra' };
    const pointerB = { __type: 'Pointer', className: '_Role', objectId: 'rb' };
    expect(a.inheritsCapabilitiesFrom(b)).toBe(b);
    expect(b.changes().roles).toEqual({ __op: 'AddRelation', objects: [pointerA] });
    const a2 = new Role(c, { objectId: 'ra', name: 'A' });
    expect(a2.grantCapabilitiesTo(b).changes().roles).toEqual({ __op: 'AddRelation', objects: [pointerB] });
    const a3 = new Role(c, { objectId: 'ra', name: 'A' });
    expect(a3.addChildRole(b).changes().roles).toEqual({ __op: 'AddRelation', objects: [pointerB] });
  });
});

describe('anonymous upgrade refusals (9)', () => {
  it('refuses locally without a request', async () => {
    const n = noNetwork();
    const c = createClient({ ...base, fetch: n.fetch });
    const fields = { username: 'x', password: 'p', email: 'x@example.com' };
    const named = new User(c, { objectId: 'u', sessionToken: 'r:t', username: 'n' });
    await expect(named.upgradeAnonymous(fields)).rejects.toBeInstanceOf(AuthenticationError);
    const noId = new User(c, { authData: { anonymous: { id: 'x' } }, sessionToken: 'r:t' });
    await expect(noId.upgradeAnonymous(fields)).rejects.toBeInstanceOf(AuthenticationError);
    const noToken = new User(c, { objectId: 'u', authData: { anonymous: { id: 'x' } } });
    await expect(noToken.upgradeAnonymous(fields)).rejects.toBeInstanceOf(AuthenticationError);
    expect(n.calls).toHaveLength(0);
  });
});

describe('errors (10)', () => {
  it('has a typed hierarchy', () => {
    expect(new InvalidSessionError('x')).toBeInstanceOf(AuthenticationError);
    expect(new ArgumentError('x')).toBeInstanceOf(BdsClientError);
    expect(new ArgumentError('x').name).toBe('ArgumentError');
  });

  it('turns a transport failure into a thrown error', async () => {
    const c = createClient({ ...base, serverURL: 'http://127.0.0.1:9/api' });
    await expect(c.find('Thing')).rejects.toMatchObject({ name: 'ConnectionError' });
  });
});

describe('push (11)', () => {
  it('refuses without a master key, before any request, even with useMasterKey: true', async () => {
    const n = noNetwork();
    const c = createClient({ ...base, fetch: n.fetch });
    await expect(c.sendPush({ data: { alert: 'hi' } }, { useMasterKey: true })).rejects.toThrow(
      /requires master key/,
    );
    await expect(c.sendPush({ data: { alert: 'hi' } })).rejects.toThrow(AuthenticationError);
    setClientMode(true);
    const m = createClient({ ...base, masterKey: 'mk', fetch: n.fetch });
    await expect(m.sendPush({ data: {} }, { useMasterKey: true })).rejects.toThrow(/requires master key/);
    expect(n.calls).toHaveLength(0);
  });
});

describe('analytics (12)', () => {
  it('checks the event name', async () => {
    const n = noNetwork();
    const c = createClient({ ...base, fetch: n.fetch });
    for (const bad of ['', 'has space', 'sl/ash', 'ü', 'a:b']) {
      await expect(c.trackEvent(bad)).rejects.toThrow(ArgumentError);
    }
    expect(n.calls).toHaveLength(0);
  });
});

describe('scrub (16)', () => {
  it('filters secret keys case-insensitively at any depth, including embedded JSON', () => {
    const out = scrub({
      PASSWORD: 'p',
      nested: { sessionToken: 'r:x', list: [{ Api_Key: 'k' }, 'plain'] },
      embedded: JSON.stringify({ masterKey: 'm', keep: 1 }),
      authData: { anonymous: { id: 'x' } },
      where: { score: { $gt: 1 } },
      email: 'a@example.com',
    }) as any;
    expect(out.PASSWORD).toBe('[FILTERED]');
    expect(out.nested.sessionToken).toBe('[FILTERED]');
    expect(out.nested.list[0].Api_Key).toBe('[FILTERED]');
    expect(out.nested.list[1]).toBe('plain');
    expect(JSON.parse(out.embedded)).toEqual({ masterKey: '[FILTERED]', keep: 1 });
    expect(out.authData).toBe('[FILTERED]');
    expect(out.where).toEqual({ score: { $gt: 1 } });
    expect(out.email).toBe('a@example.com');
  });

  it('replaces numeric arrays of 32 or more by a placeholder', () => {
    const v32 = Array.from({ length: 32 }, (_, i) => i / 10);
    const out = scrub({ embedding: v32, short: [1, 2, 3], mixed: [...v32, 'x'] }) as any;
    expect(out.embedding).toBe('<vector dims=32>');
    expect(out.short).toEqual([1, 2, 3]);
    expect(out.mixed).toHaveLength(33);
    expect(scrub(Array.from({ length: 31 }, () => 1))).toHaveLength(31);
  });

  it('filters secret headers', () => {
    const out = scrubHeaders({
      'X-Backend-Master-Key': 'm',
      'x-backend-rest-api-key': 'r',
      'X-Backend-Session-Token': 's',
      'X-Backend-JavaScript-Key': 'j',
      Authorization: 'Bearer x',
      Cookie: 'c',
      'X-Api-Key': 'k',
      'X-Backend-Application-Id': 'app',
    });
    expect(out['X-Backend-Application-Id']).toBe('app');
    for (const [k, v] of Object.entries(out))
      if (k !== 'X-Backend-Application-Id') expect(v).toBe('[FILTERED]');
  });
});

describe('cache tenant (17)', () => {
  it('validates the label', () => {
    expect(() => withCacheTenant('a:b', () => 1)).toThrow(/colon/);
    expect(() => withCacheTenant('', () => 1)).toThrow(ArgumentError);
    expect(() => withCacheTenant('x'.repeat(257), () => 1)).toThrow(ArgumentError);
    expect(() => withCacheTenant('a b', () => 1)).toThrow(ArgumentError);
    expect(withCacheTenant('x'.repeat(256), () => 1)).toBe(1);
    expect(withCacheTenant('Tenant_1-a', () => 2)).toBe(2);
  });
});

describe('ambient scope', () => {
  it('withScope isolates imperative state', () => {
    withScope(() => {
      expect(currentSessionToken()).toBeUndefined();
    });
  });
});
