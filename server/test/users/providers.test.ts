import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FILTERED, scrub } from '@bds/client/protocol';
import { exportJWK, exportPKCS8, generateKeyPair } from 'jose';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OptionError, validateOptions } from '../../src/config/options.ts';
import { createService } from '../../src/index.ts';
import { createLogger } from '../../src/kernel/log.ts';
import { AuthProviders } from '../../src/users/providers.ts';
import { spendResetLink } from '../helpers/account-mail.ts';
import { type TestIssuer, testIssuer } from '../helpers/id-tokens.ts';
import { KEYS, type RequestOptions, startService, type TestService } from '../helpers/service.ts';

/**
 * The exact REST answers of the account rules the stock SDKs rely on (server/test/parse-sdk/users*
 * drive the same through the SDK): auth providers (cloud-registered and OpenID ID tokens), linking
 * and unlinking, 208, 252 and 162, verifyPassword, loginAs, the sign-up and update answers, and
 * the options preventLoginWithUnverifiedEmail, revokeSessionOnPasswordReset and allowCustomObjectId.
 */

const CLOUD = fileURLToPath(new URL('../fixtures/auth-cloud.ts', import.meta.url));
const TOKEN = /^r:[0-9a-f]{32}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const err = (code: number, error: string) => ({ code, error });
const UNSUPPORTED = err(252, 'This authentication method is unsupported.');
const ALREADY_LINKED = err(208, 'this auth is already used');

let t: TestService;
let oidc: TestIssuer;
let pem: TestIssuer;

const send = (method: string, p: string, options: RequestOptions = {}) => t.request(method, p, options);
const signUp = async (body: Record<string, unknown>) => {
  const res = await send('POST', '/users', { body });
  if (res.status !== 201) throw new Error(`sign-up: ${res.status} ${res.text}`);
  return res.json as { objectId: string; sessionToken: string };
};
const stored = async (userId: string) => (await send('GET', `/users/${userId}`, { as: 'master' })).json;
const userCount = async () =>
  (await send('GET', '/classes/_User', { as: 'master', query: { count: 1, limit: 0 } })).json.count as number;

beforeAll(async () => {
  oidc = await testIssuer('https://accounts.issuer.test', 'rest-client-id');
  pem = await testIssuer('https://pem.issuer.test', 'pem-client-id', 'ES256');
  t = await startService({
    cloud: CLOUD,
    auth: {
      oidc: { issuer: oidc.issuer, audience: oidc.audience, jwks: oidc.jwks, algorithms: ['RS256'] },
      pemco: {
        issuer: [pem.issuer, 'https://other.test'],
        audience: pem.audience,
        publicKeys: [pem.publicKeyPem],
      },
    },
  });
});

afterAll(async () => {
  await t?.close();
});

describe('signing in with an auth provider (POST /users with authData)', () => {
  it('a new provider id signs up: 201 with the objectId, createdAt, the chosen username and a session', async () => {
    const res = await send('POST', '/users', {
      body: { authData: { myprov: { id: 'r1', token: 'good-r1' } } },
    });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.json).sort()).toEqual(['createdAt', 'objectId', 'sessionToken', 'username']);
    expect(res.json.createdAt).toMatch(ISO);
    expect(res.json.sessionToken).toMatch(TOKEN);
    expect(res.json.username).toMatch(/^[a-z0-9]{25}$/);
    expect(res.headers.get('Location')).toMatch(new RegExp(`/api/users/${res.json.objectId}$`));
    const session = await send('GET', '/sessions/me', { sessionToken: res.json.sessionToken });
    expect(session.json.createdWith).toEqual({ action: 'signup', authProvider: 'myprov' });
    expect((await stored(res.json.objectId)).authData).toEqual({ myprov: { id: 'r1', token: 'good-r1' } });
  });

  it('the same provider id logs in: 200 with the user’s row and a new session; a new payload is kept', async () => {
    const first = await signUp({ authData: { myprov: { id: 'r2', token: 'good-r2' } } });
    const res = await send('POST', '/users', {
      body: { authData: { myprov: { id: 'r2', token: 'good-r2', refreshed: 1 } } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({
      objectId: first.objectId,
      authData: { myprov: { id: 'r2', refreshed: 1 } },
    });
    expect(res.json.sessionToken).toMatch(TOKEN);
    expect(res.json.sessionToken).not.toBe(first.sessionToken);
    expect(res.json.password).toBeUndefined();
    const session = await send('GET', '/sessions/me', { sessionToken: res.json.sessionToken });
    expect(session.json.createdWith).toEqual({ action: 'login', authProvider: 'myprov' });
    expect((await stored(first.objectId)).authData.myprov).toEqual({
      id: 'r2',
      token: 'good-r2',
      refreshed: 1,
    });
  });

  it('a payload the provider refuses answers its text (141); nothing is created or changed', async () => {
    const before = await userCount();
    const res = await send('POST', '/users', { body: { authData: { myprov: { id: 'r3', token: 'bad' } } } });
    expect(res.status).toBe(400);
    expect(res.json).toEqual(err(141, 'myprov refused the token'));
    expect(await userCount()).toBe(before);
    // A known id with a refused payload logs nobody in and keeps the stored payload.
    const known = await signUp({ authData: { myprov: { id: 'r3b', token: 'good-r3b' } } });
    const forged = await send('POST', '/users', {
      body: { authData: { myprov: { id: 'r3b', token: 'x' } } },
    });
    expect(forged.json).toEqual(err(141, 'myprov refused the token'));
    expect((await stored(known.objectId)).authData).toEqual({ myprov: { id: 'r3b', token: 'good-r3b' } });
  });

  it('a provider that is not configured answers 252 and creates nothing', async () => {
    const before = await userCount();
    for (const body of [
      { authData: { facebook: { id: '1', access_token: 'x' } } },
      { username: 'fb', password: 'pw', authData: { facebook: { id: '1', access_token: 'x' } } },
    ]) {
      const res = await send('POST', '/users', { body });
      expect(res.status).toBe(400);
      expect(res.json).toEqual(UNSUPPORTED);
    }
    expect(await userCount()).toBe(before);
  });

  it('a payload without a string id answers 162; one that is not an object answers 111', async () => {
    for (const value of [
      { token: 'good-undefined' },
      { id: 5, token: 'good-5' },
      { id: '', token: 'good-' },
    ]) {
      const res = await send('POST', '/users', { body: { authData: { myprov: value } } });
      expect(res.status).toBe(400);
      expect(res.json).toEqual(err(162, "Invalid authData id for provider 'myprov'."));
    }
    const res = await send('POST', '/users', { body: { authData: { myprov: 'x' } } });
    expect(res.json).toEqual(err(111, 'authData.myprov must be an object.'));
  });

  it('the adapter gets the request: validateSetUp at sign-up, validateLogin with the user at login', async () => {
    await send('POST', '/users', {
      body: { authData: { myprov: { id: 'r4', token: 'good-r4' } } },
      headers: { 'X-Backend-Installation-Id': 'inst-r4' },
    });
    const setUp = await send('POST', '/functions/lastProviderCall', { as: 'master' });
    expect(setUp.json.result).toEqual({
      authData: { id: 'r4', token: 'good-r4' },
      triggerName: 'validateSetUp',
      object: null,
      user: null,
      master: false,
      installationId: 'inst-r4',
      api: true,
    });
    const login = await send('POST', '/users', {
      body: { authData: { myprov: { id: 'r4', token: 'good-r4' } } },
    });
    const seen = await send('POST', '/functions/lastProviderCall', { as: 'master' });
    expect(seen.json.result).toMatchObject({ triggerName: 'validateLogin', object: login.json.objectId });
  });

  it('an enrolled MFA user needs the second factor on a provider login too (211, then 210)', async () => {
    const u = await signUp({ authData: { myprov: { id: 'r5', token: 'good-r5' } } });
    const secret = new Secret({ size: 20 }).base32;
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
    const enrol = await send('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { authData: { mfa: { secret, token: totp.generate() } } },
    });
    expect(enrol.status, enrol.text).toBe(200);
    const provider = { myprov: { id: 'r5', token: 'good-r5' } };
    const missing = await send('POST', '/users', { body: { authData: provider } });
    expect(missing.json).toEqual(err(211, 'Missing additional authData mfa.token.'));
    const wrong = await send('POST', '/users', {
      body: { authData: { ...provider, mfa: { token: '000000' } } },
    });
    expect(wrong.json.code).toBe(210);
    const ok = await send('POST', '/users', {
      body: { authData: { ...provider, mfa: { token: totp.generate() } } },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.objectId).toBe(u.objectId);
  });

  it('a beforeLogin trigger refuses a provider login and an anonymous login (142), no session made', async () => {
    const named = await signUp({ username: 'blocked', password: 'pw-blocked' });
    const link = await send('PUT', `/users/${named.objectId}`, {
      body: { authData: { myprov: { id: 'r6', token: 'good-r6' }, anonymous: { id: 'anon-blocked' } } },
      as: 'master',
    });
    expect(link.status, link.text).toBe(200);
    const sessionsBefore = (
      await send('GET', '/classes/_Session', { as: 'master', query: { count: 1, limit: 0 } })
    ).json.count;
    for (const authData of [
      { myprov: { id: 'r6', token: 'good-r6' } },
      { anonymous: { id: 'anon-blocked' } },
    ]) {
      const res = await send('POST', '/users', { body: { authData } });
      expect(res.status).toBe(400);
      expect(res.json).toEqual(err(142, 'blocked by beforeLogin'));
    }
    // A new payload brought by the refused login is not stored either.
    const refreshed = await send('POST', '/users', {
      body: { authData: { myprov: { id: 'r6', token: 'good-r6', refreshed: true } } },
    });
    expect(refreshed.json).toEqual(err(142, 'blocked by beforeLogin'));
    expect((await stored(named.objectId)).authData.myprov).toEqual({ id: 'r6', token: 'good-r6' });
    const sessionsAfter = (
      await send('GET', '/classes/_Session', { as: 'master', query: { count: 1, limit: 0 } })
    ).json.count;
    expect(sessionsAfter).toBe(sessionsBefore);
  });
});

describe('OpenID ID tokens checked against the configured keys', () => {
  const login = (provider: string, authData: Record<string, unknown>) =>
    send('POST', '/users', { body: { authData: { [provider]: authData } } });

  it('a token signed by a key of the JWKS, for the configured issuer and audience, with sub = id', async () => {
    const res = await login('oidc', { id: 'sub-a', id_token: await oidc.token('sub-a') });
    expect(res.status, res.text).toBe(201);
    // The token may also come as `token` (the field Apple's SDKs send).
    const again = await login('oidc', { id: 'sub-a', token: await oidc.token('sub-a') });
    expect(again.status, again.text).toBe(200);
    expect(again.json.objectId).toBe(res.json.objectId);
  });

  it('a PEM public key, and an issuer from a list', async () => {
    const res = await login('pemco', { id: 'sub-p', id_token: await pem.token('sub-p') });
    expect(res.status, res.text).toBe(201);
    const other = await login('pemco', {
      id: 'sub-q',
      id_token: await pem.token('sub-q', { iss: 'https://other.test' }),
    });
    expect(other.status, other.text).toBe(201);
  });

  it('each refusal answers 101 with its text and creates nothing', async () => {
    const before = await userCount();
    const hourAgo = Math.floor(Date.now() / 1000) - 3600;
    const future = Math.floor(Date.now() / 1000) + 3600;
    const es256 = await testIssuer(oidc.issuer, oidc.audience, 'ES256');
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['oidc', { id: 's' }, 'id token is invalid for this user.'],
      ['oidc', { id: 's', id_token: 42 }, 'id token is invalid for this user.'],
      ['oidc', { id: 's', id_token: 'not.a.jwt' }, 'jwt malformed'],
      ['oidc', { id: 's', id_token: await oidc.token('s', { exp: hourAgo }) }, 'jwt expired'],
      ['oidc', { id: 's', id_token: await oidc.token('s', { nbf: future }) }, 'jwt not active'],
      [
        'oidc',
        { id: 's', id_token: await oidc.token('s', { exp: undefined }) },
        'id token is invalid for this user.',
      ],
      [
        'oidc',
        { id: 's', id_token: await oidc.token('s', { aud: 'someone-else' }) },
        'jwt audience invalid. expected: rest-client-id',
      ],
      [
        'oidc',
        { id: 's', id_token: await oidc.token('s', { iss: 'https://evil.test' }) },
        'id token not issued by correct provider - expected: https://accounts.issuer.test | from: https://evil.test',
      ],
      [
        'pemco',
        { id: 's', id_token: await pem.token('s', { iss: 'https://evil.test' }) },
        'id token not issued by correct provider - expected: https://pem.issuer.test or https://other.test | from: https://evil.test',
      ],
      ['oidc', { id: 'other', id_token: await oidc.token('s') }, 'auth data is invalid for this user.'],
      [
        'oidc',
        { id: 's', id_token: await oidc.token('s', {}, { kid: 'unknown-kid' }) },
        'Unable to find matching key for Key ID: unknown-kid',
      ],
      ['oidc', { id: 's', id_token: await es256.token('s', {}, { kid: oidc.kid }) }, 'invalid algorithm'],
      [
        'oidc',
        {
          id: 's',
          id_token: await (await testIssuer(oidc.issuer, oidc.audience)).token('s', {}, { kid: oidc.kid }),
        },
        'invalid signature',
      ],
      ['pemco', { id: 's', id_token: await oidc.token('s') }, 'invalid signature'],
    ];
    for (const [provider, authData, message] of cases) {
      const res = await login(provider, authData);
      expect(res.status, `${message}: ${res.text}`).toBe(404);
      expect(res.json).toEqual(err(101, message));
    }
    expect(await userCount()).toBe(before);
  });
});

describe('linking and unlinking (PUT /users/<id>)', () => {
  it('links with the own session: 200 {updatedAt}; the provider logs the user in; unlink with null', async () => {
    const u = await signUp({ username: 'link-a', password: 'pw' });
    const link = await send('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { authData: { myprov: { id: 'la', token: 'good-la' } } },
    });
    expect(link.status, link.text).toBe(200);
    expect(Object.keys(link.json)).toEqual(['updatedAt']);
    const seen = await send('POST', '/functions/lastProviderCall', { as: 'master' });
    expect(seen.json.result).toMatchObject({
      triggerName: 'validateSetUp',
      object: u.objectId,
      user: u.objectId,
    });
    const viaProvider = await send('POST', '/users', {
      body: { authData: { myprov: { id: 'la', token: 'good-la' } } },
    });
    expect(viaProvider.status).toBe(200);
    expect(viaProvider.json.objectId).toBe(u.objectId);
    // A changed payload of a linked provider is checked again (validateUpdate).
    const update = await send('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { authData: { myprov: { id: 'la', token: 'good-la', scope: 'more' } } },
    });
    expect(update.status, update.text).toBe(200);
    const seenUpdate = await send('POST', '/functions/lastProviderCall', { as: 'master' });
    expect(seenUpdate.json.result.triggerName).toBe('validateUpdate');

    const unlink = await send('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { authData: { myprov: null } },
    });
    expect(unlink.status, unlink.text).toBe(200);
    expect(Object.keys(unlink.json)).toEqual(['updatedAt']);
    expect((await stored(u.objectId)).authData).toBeUndefined();
    const again = await send('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { authData: { myprov: null, nope: null } },
    });
    expect(again.status, again.text).toBe(200);
  });

  it('an id linked to another user answers 208, after the payload is checked; nothing changes', async () => {
    const owner = await signUp({ authData: { myprov: { id: 'taken', token: 'good-taken' } } });
    const other = await signUp({ username: 'link-b', password: 'pw' });
    const taken = await send('PUT', `/users/${other.objectId}`, {
      sessionToken: other.sessionToken,
      body: { authData: { myprov: { id: 'taken', token: 'good-taken' } } },
    });
    expect(taken.status).toBe(400);
    expect(taken.json).toEqual(ALREADY_LINKED);
    // Without a valid payload the caller learns nothing about who holds the id.
    const probe = await send('PUT', `/users/${other.objectId}`, {
      sessionToken: other.sessionToken,
      body: { authData: { myprov: { id: 'taken', token: 'guess' } } },
    });
    expect(probe.json).toEqual(err(141, 'myprov refused the token'));
    // The master key is held to the same rule.
    const byMaster = await send('PUT', `/users/${other.objectId}`, {
      as: 'master',
      body: { authData: { myprov: { id: 'taken', token: 'whatever' } } },
    });
    expect(byMaster.json).toEqual(ALREADY_LINKED);
    expect((await stored(other.objectId)).authData).toBeUndefined();
    expect((await stored(owner.objectId)).authData).toEqual({ myprov: { id: 'taken', token: 'good-taken' } });
  });

  it('a provider that is not configured answers 252 to a user; 162 for a bad id; 206 for another user', async () => {
    const u = await signUp({ username: 'link-c', password: 'pw' });
    const as = { sessionToken: u.sessionToken };
    expect(
      (await send('PUT', `/users/${u.objectId}`, { ...as, body: { authData: { nope: { id: 'z' } } } })).json,
    ).toEqual(UNSUPPORTED);
    expect(
      (await send('PUT', `/users/${u.objectId}`, { ...as, body: { authData: { myprov: { id: 7 } } } })).json,
    ).toEqual(err(162, "Invalid authData id for provider 'myprov'."));
    const other = await signUp({ username: 'link-d', password: 'pw' });
    const cross = await send('PUT', `/users/${u.objectId}`, {
      sessionToken: other.sessionToken,
      body: { authData: { myprov: { id: 'lc', token: 'good-lc' } } },
    });
    expect(cross.json).toEqual(err(206, `Insufficient auth to update user ${u.objectId}.`));
    expect((await stored(u.objectId)).authData).toBeUndefined();
  });

  it('an anonymous user links a provider and drops the anonymous id in one request', async () => {
    const anon = await send('POST', '/users', { body: { authData: { anonymous: { id: 'anon-link-1' } } } });
    const res = await send('PUT', `/users/${anon.json.objectId}`, {
      sessionToken: anon.json.sessionToken,
      body: {
        authData: { anonymous: null, oidc: { id: 'sub-link', id_token: await oidc.token('sub-link') } },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys((await stored(anon.json.objectId)).authData)).toEqual(['oidc']);
    // The anonymous id no longer logs in: it signs up someone new.
    const reused = await send('POST', '/users', { body: { authData: { anonymous: { id: 'anon-link-1' } } } });
    expect(reused.status).toBe(201);
    expect(reused.json.objectId).not.toBe(anon.json.objectId);
  });

  it('a user links an anonymous id with its own session; one another user holds answers 208', async () => {
    const anon = await send('POST', '/users', { body: { authData: { anonymous: { id: 'anon-echo' } } } });
    const as = { sessionToken: anon.json.sessionToken };
    // Sent back as held: nothing changes.
    const echo = await send('PUT', `/users/${anon.json.objectId}`, {
      ...as,
      body: { nickname: 'n', authData: { anonymous: { id: 'anon-echo' } } },
    });
    expect(echo.status, echo.text).toBe(200);
    const named = await signUp({ username: 'anon-linker-rest', password: 'pw' });
    const link = await send('PUT', `/users/${named.objectId}`, {
      sessionToken: named.sessionToken,
      body: { authData: { anonymous: { id: 'anon-late' } } },
    });
    expect(link.status, link.text).toBe(200);
    const viaId = await send('POST', '/users', { body: { authData: { anonymous: { id: 'anon-late' } } } });
    expect(viaId.json.objectId).toBe(named.objectId);
    const taken = await send('PUT', `/users/${named.objectId}`, {
      sessionToken: named.sessionToken,
      body: { authData: { anonymous: { id: 'anon-echo' } } },
    });
    expect(taken.json).toEqual(ALREADY_LINKED);
    expect((await stored(named.objectId)).authData).toEqual({ anonymous: { id: 'anon-late' } });
  });

  it('authData is stripped from other callers’ reads and never in a find by a user', async () => {
    const u = await signUp({ authData: { myprov: { id: 'strip', token: 'good-strip' } } });
    const own = await send('GET', `/users/${u.objectId}`, { sessionToken: u.sessionToken });
    expect(own.json.authData).toBeUndefined();
    const find = await send('GET', '/users', { sessionToken: u.sessionToken });
    expect(find.text).not.toContain('good-strip');
    // The user's own row (me, sign-in answers) carries it, as the incumbent's.
    const me = await send('GET', '/users/me', { sessionToken: u.sessionToken });
    expect(me.json.authData).toEqual({ myprov: { id: 'strip', token: 'good-strip' } });
  });
});

describe('POST /verifyPassword and GET /verifyPassword', () => {
  let vera: { objectId: string; sessionToken: string };
  beforeAll(async () => {
    vera = await signUp({ username: 'vp-vera', password: 'pw-vera', email: 'vp-vera@example.com' });
  });

  it('answers the user’s row without a session token or password, by username or email', async () => {
    const byBody = await send('POST', '/verifyPassword', {
      body: { username: 'VP-Vera', password: 'pw-vera' },
    });
    expect(byBody.status, byBody.text).toBe(200);
    expect(byBody.json).toMatchObject({
      objectId: vera.objectId,
      username: 'vp-vera',
      email: 'vp-vera@example.com',
    });
    expect(byBody.json.sessionToken).toBeUndefined();
    expect(byBody.json.password).toBeUndefined();
    const byQuery = await send('GET', '/verifyPassword', {
      query: { email: 'vp-vera@example.com', password: 'pw-vera' },
    });
    expect(byQuery.status, byQuery.text).toBe(200);
    expect(byQuery.json.objectId).toBe(vera.objectId);
    // The SDKs' form: a POST with `_method: GET` and the parameters in the body.
    const sdkForm = await send('POST', '/verifyPassword', {
      body: { _method: 'GET', username: 'vp-vera', password: 'pw-vera' },
    });
    expect(sdkForm.json.objectId).toBe(vera.objectId);
    // No session was made.
    const sessions = await send('GET', '/classes/_Session', {
      as: 'master',
      query: {
        where: { user: { __type: 'Pointer', className: '_User', objectId: vera.objectId } },
        count: 1,
      },
    });
    expect(sessions.json.count).toBe(1);
  });

  it('answers the login’s codes and texts', async () => {
    const cases: Array<[Record<string, unknown>, number, ReturnType<typeof err>]> = [
      [{}, 400, err(200, 'username/email is required.')],
      [{ username: 'vp-vera' }, 400, err(201, 'password is required.')],
      [{ username: 'vp-vera', password: 'wrong' }, 404, err(101, 'Invalid username/password.')],
      [{ username: 'nobody', password: 'pw-vera' }, 404, err(101, 'Invalid username/password.')],
    ];
    for (const [body, status, answer] of cases) {
      const res = await send('POST', '/verifyPassword', { body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.json).toEqual(answer);
    }
  });
});

describe('verifyPassword counts with login against the default rate limit', () => {
  it('30 password checks a minute from one address, logins and verifyPassword together; then 429 (155)', async () => {
    const limited = await startService({ rateLimit: undefined, passwordHashCost: 12 });
    try {
      for (let i = 0; i < 30; i++) {
        const res = await limited.request('POST', i % 2 ? '/verifyPassword' : '/login', {
          body: { username: 'nobody', password: 'guess' },
        });
        expect(res.status).toBe(404);
      }
      for (const path of ['/verifyPassword', '/login']) {
        const over = await limited.request(path === '/login' ? 'POST' : 'GET', path, {
          query: { username: 'nobody', password: 'guess' },
        });
        expect(over.status, path).toBe(429);
        expect(over.json.code).toBe(155);
      }
    } finally {
      await limited.close();
    }
  });
});

describe('POST /loginAs', () => {
  it('the master key gets a session for the user: the row and a token (createdWith login, masterkey)', async () => {
    const u = await signUp({ username: 'as-ann', password: 'pw' });
    const res = await send('POST', '/loginAs', { as: 'master', body: { userId: u.objectId } });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ objectId: u.objectId, username: 'as-ann' });
    expect(res.json.sessionToken).toMatch(TOKEN);
    expect(res.json.password).toBeUndefined();
    const session = await send('GET', '/sessions/me', { sessionToken: res.json.sessionToken });
    expect(session.json.createdWith).toEqual({ action: 'login', authProvider: 'masterkey' });
    expect((await send('GET', '/users/me', { sessionToken: res.json.sessionToken })).json.objectId).toBe(
      u.objectId,
    );
  });

  it('adds a session: the user’s session on the same installation stays', async () => {
    const device = { 'X-Backend-Installation-Id': 'as-device-1' };
    const u = await send('POST', '/users', { body: { username: 'as-dev', password: 'pw' }, headers: device });
    const res = await send('POST', '/loginAs', {
      as: 'master',
      body: { userId: u.json.objectId },
      headers: device,
    });
    expect(res.status, res.text).toBe(200);
    expect((await send('GET', '/users/me', { sessionToken: u.json.sessionToken })).status).toBe(200);
  });

  it('answers the incumbent’s codes; without the master key 119 (HTTP 403), nothing made', async () => {
    const u = await signUp({ username: 'as-bob', password: 'pw' });
    const cases: Array<[RequestOptions, number, ReturnType<typeof err>]> = [
      [{ as: 'master', body: {} }, 400, err(162, 'userId must not be empty, null, or undefined')],
      [{ as: 'master', body: { userId: '' } }, 400, err(162, 'userId must not be empty, null, or undefined')],
      [{ as: 'master', body: { userId: 12 } }, 400, err(162, 'userId must be a string.')],
      [{ as: 'master', body: { userId: 'nobody1234' } }, 404, err(101, 'user not found')],
      [{ body: { userId: u.objectId } }, 403, err(119, 'unauthorized: master key is required')],
      [
        { sessionToken: u.sessionToken, body: { userId: u.objectId } },
        403,
        err(119, 'unauthorized: master key is required'),
      ],
    ];
    for (const [options, status, answer] of cases) {
      const res = await send('POST', '/loginAs', options);
      expect(res.status, JSON.stringify(options.body)).toBe(status);
      expect(res.json).toEqual(answer);
    }
    const sessions = await send('GET', '/classes/_Session', {
      as: 'master',
      query: { where: { user: { __type: 'Pointer', className: '_User', objectId: u.objectId } }, count: 1 },
    });
    expect(sessions.json.count).toBe(1);
  });
});

describe('POST /upgradeToRevocableSession', () => {
  it('a new session replaces the caller’s: the session row with its token; the old token ends', async () => {
    const u = await signUp({ username: 'up-a', password: 'pw' });
    const res = await send('POST', '/upgradeToRevocableSession', { sessionToken: u.sessionToken });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({
      user: { __type: 'Pointer', className: '_User', objectId: u.objectId },
      createdWith: { action: 'upgrade', authProvider: 'password' },
    });
    expect(res.json.sessionToken).toMatch(TOKEN);
    expect(res.json.sessionToken).not.toBe(u.sessionToken);
    expect((await send('GET', '/users/me', { sessionToken: res.json.sessionToken })).status).toBe(200);
    const old = await send('GET', '/users/me', { sessionToken: u.sessionToken });
    expect(old.json).toEqual(err(209, 'Invalid session token'));
  });

  it('without a session: 209', async () => {
    const res = await send('POST', '/upgradeToRevocableSession', {});
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(209);
  });
});

describe('the answers of sign-up and update', () => {
  it('a sign-up answers objectId, createdAt and the session token; the name when the service changed it', async () => {
    const plain = await send('POST', '/users', { body: { username: 'ans-a', password: 'pw', extra: 1 } });
    expect(plain.status).toBe(201);
    expect(Object.keys(plain.json).sort()).toEqual(['createdAt', 'objectId', 'sessionToken']);
    const mixed = await send('POST', '/users', {
      body: { username: 'Ans-B', password: 'pw', email: 'Ans-B@Example.com' },
    });
    expect(mixed.json).toEqual({
      objectId: mixed.json.objectId,
      createdAt: mixed.json.createdAt,
      username: 'ans-b',
      email: 'ans-b@example.com',
      sessionToken: mixed.json.sessionToken,
    });
    const anonymous = await send('POST', '/users', { body: { authData: { anonymous: { id: 'ans-anon' } } } });
    expect(Object.keys(anonymous.json).sort()).toEqual(['createdAt', 'objectId', 'sessionToken', 'username']);
  });

  it('an update answers {updatedAt}; a user’s own ACL change keeps the user’s own entry', async () => {
    const u = await signUp({ username: 'ans-c', password: 'pw' });
    const res = await send('PUT', `/users/${u.objectId}`, {
      sessionToken: u.sessionToken,
      body: { nickname: 'c', ACL: { '*': { read: true } } },
    });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.json)).toEqual(['updatedAt']);
    expect((await stored(u.objectId)).ACL).toEqual({
      '*': { read: true },
      [u.objectId]: { read: true, write: true },
    });
    // The master key sets what it sends.
    await send('PUT', `/users/${u.objectId}`, { as: 'master', body: { ACL: { '*': { read: true } } } });
    expect((await stored(u.objectId)).ACL).toEqual({ '*': { read: true } });
  });
});

describe('the options preventLoginWithUnverifiedEmail, revokeSessionOnPasswordReset, allowCustomObjectId', () => {
  let o: TestService;
  beforeAll(async () => {
    o = await startService({
      verifyUserEmails: true,
      preventLoginWithUnverifiedEmail: true,
      revokeSessionOnPasswordReset: false,
      allowCustomObjectId: true,
    });
    const schema = await o.request('POST', '/schemas/Thing', {
      as: 'master',
      body: { className: 'Thing', classLevelPermissions: { create: { '*': true }, get: { '*': true } } },
    });
    expect(schema.status, schema.text).toBe(200);
  });
  afterAll(async () => {
    await o?.close();
  });

  it('preventLoginWithUnverifiedEmail: the sign-up has no session; login and verifyPassword answer 205', async () => {
    const signup = await o.request('POST', '/users', {
      body: { username: 'pl-a', password: 'pw-a', email: 'pl-a@example.com' },
    });
    expect(signup.status, signup.text).toBe(201);
    expect(signup.json).toEqual({
      objectId: signup.json.objectId,
      createdAt: signup.json.createdAt,
      emailVerified: false,
    });
    const notVerified = err(205, 'User email is not verified.');
    const login = await o.request('POST', '/login', { body: { username: 'pl-a', password: 'pw-a' } });
    expect(login.status).toBe(400);
    expect(login.json).toEqual(notVerified);
    const verify = await o.request('POST', '/verifyPassword', {
      body: { username: 'pl-a', password: 'pw-a' },
    });
    expect(verify.json).toEqual(notVerified);
    // The master key checks it too, unless it asks to ignore the verification.
    const masterVerify = await o.request('POST', '/verifyPassword', {
      as: 'master',
      body: { username: 'pl-a', password: 'pw-a' },
    });
    expect(masterVerify.json).toEqual(notVerified);
    const ignored = await o.request('POST', '/verifyPassword', {
      as: 'master',
      body: { username: 'pl-a', password: 'pw-a', ignoreEmailVerification: true },
    });
    expect(ignored.status, ignored.text).toBe(200);
    // ignoreEmailVerification without the master key changes nothing.
    const notMaster = await o.request('POST', '/verifyPassword', {
      body: { username: 'pl-a', password: 'pw-a', ignoreEmailVerification: true },
    });
    expect(notMaster.json).toEqual(notVerified);
    // A wrong password answers 101 as always.
    const wrong = await o.request('POST', '/login', { body: { username: 'pl-a', password: 'nope' } });
    expect(wrong.json).toEqual(err(101, 'Invalid username/password.'));
    // An anonymous user (no email) signs in as before.
    const anon = await o.request('POST', '/users', { body: { authData: { anonymous: { id: 'pl-anon' } } } });
    expect(anon.json.sessionToken).toMatch(TOKEN);
  });

  it('revokeSessionOnPasswordReset: false keeps the sessions on a reset and on a password change', async () => {
    const created = await o.request('POST', '/users', {
      as: 'master',
      body: { username: 'rs-a', password: 'pw-1', email: 'rs-a@example.com', emailVerified: true },
    });
    expect(created.json.sessionToken).toMatch(TOKEN);
    const other = (await o.request('POST', '/login', { body: { username: 'rs-a', password: 'pw-1' } })).json
      .sessionToken as string;
    await o.request('POST', '/requestPasswordReset', { body: { email: 'rs-a@example.com' } });
    await spendResetLink(o, 'rs-a@example.com', 'pw-2');
    for (const token of [created.json.sessionToken, other])
      expect((await o.request('GET', '/users/me', { sessionToken: token })).status).toBe(200);
    const change = await o.request('PUT', `/users/${created.json.objectId}`, {
      sessionToken: other,
      body: { password: 'pw-3' },
    });
    expect(change.status, change.text).toBe(200);
    expect((await o.request('GET', '/users/me', { sessionToken: created.json.sessionToken })).status).toBe(
      200,
    );
  });

  it('allowCustomObjectId: any caller chooses the objectId of a create; an empty one answers 104', async () => {
    const res = await o.request('POST', '/classes/Thing', { body: { objectId: 'client-chosen' } });
    expect(res.status, res.text).toBe(201);
    expect(res.json.objectId).toBe('client-chosen');
    for (const objectId of ['', null]) {
      const empty = await o.request('POST', '/classes/Thing', { body: { objectId } });
      expect(empty.status).toBe(400);
      expect(empty.json).toEqual(err(104, 'objectId must not be empty, null or undefined'));
    }
    const bad = await o.request('POST', '/classes/Thing', { body: { objectId: 'has space' } });
    expect(bad.json).toEqual(err(105, 'objectId must be 1 to 64 letters, digits, "_" or "-".'));
    const dup = await o.request('POST', '/classes/Thing', { body: { objectId: 'client-chosen' } });
    expect(dup.json).toEqual(err(137, 'A duplicate value for a field with unique values was provided.'));
    const user = await o.request('POST', '/users', {
      body: { objectId: 'chosenUser1', username: 'co-a', password: 'pw', email: 'co-a@example.com' },
    });
    expect(user.status, user.text).toBe(201);
    expect(user.json.objectId).toBe('chosenUser1');
  });

  it('the defaults: revokeSessionOnPasswordReset true, allowCustomObjectId false, preventLogin false', () => {
    const options = validateOptions({ appId: 'a', masterKey: 'master-key-123' });
    expect(options).toMatchObject({
      revokeSessionOnPasswordReset: true,
      allowCustomObjectId: false,
      preventLoginWithUnverifiedEmail: false,
      auth: {},
    });
  });
});

describe('the option auth: bad providers stop the start, naming the option', () => {
  const BASE = { appId: 'a', masterKey: 'master-key-123' };
  const refused = (auth: unknown, option: string, text: string) => {
    let error: unknown;
    try {
      validateOptions({ ...BASE, auth });
    } catch (e) {
      error = e;
    }
    expect(error, option).toBeInstanceOf(OptionError);
    expect((error as OptionError).option).toBe(option);
    expect((error as OptionError).message).toContain(text);
  };

  it('names, keys, issuer and audience', async () => {
    const issuer = await testIssuer();
    const keys = issuer.jwks;
    const pemKey = issuer.publicKeyPem;
    const ok = { issuer: 'https://i.test', audience: 'x', jwks: keys };
    refused({ anonymous: ok }, 'auth.anonymous', 'anonymous is built in');
    refused({ mfa: ok }, 'auth.mfa', 'mfa is the second factor');
    refused({ 'bad name': ok }, 'auth.bad name', 'a provider name');
    refused({ p: { issuer: 'https://i.test', audience: 'x' } }, 'auth.p', 'needs jwks or publicKeys');
    refused({ p: { ...ok, publicKeys: [pemKey] } }, 'auth.p', 'needs jwks or publicKeys');
    refused(
      { p: { ...ok, jwks: { keys: [{ kty: 'RSA', n: 'x' }] } } },
      'auth.p.jwks.keys.0',
      'not a public key',
    );
    refused(
      {
        p: {
          issuer: 'https://i.test',
          audience: 'x',
          publicKeys: ['-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----'],
        },
      },
      'auth.p.publicKeys.0',
      'not a public key',
    );
    // Private key material is refused even where a public key can be derived from it.
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const privateJwk = await exportJWK(privateKey);
    refused({ p: { ...ok, jwks: { keys: [privateJwk] } } }, 'auth.p.jwks.keys.0', 'not a public key');
    const { d: _d, ...primesOnly } = privateJwk;
    refused({ p: { ...ok, jwks: { keys: [primesOnly] } } }, 'auth.p.jwks.keys.0', 'not a public key');
    const privatePem = await exportPKCS8(privateKey);
    refused(
      { p: { issuer: 'https://i.test', audience: 'x', publicKeys: [`${privatePem}\n${pemKey}`] } },
      'auth.p.publicKeys.0',
      'not a public key',
    );
    refused({ p: { ...ok, issuer: [] } }, 'auth.p.issuer', '');
    refused({ p: { ...ok, audience: '' } }, 'auth.p.audience', '');
    refused({ p: { ...ok, algorithms: ['HS256'] } }, 'auth.p.algorithms.0', '');
    refused({ p: { ...ok, extra: 1 } }, 'auth.p.extra', 'unknown option');
  });
});

describe('one provider name, one check', () => {
  it('a name both in the option auth and registered by the cloud module stops the start', async () => {
    const issuer = await testIssuer();
    const options = validateOptions({
      appId: 'a',
      masterKey: 'master-key-123',
      auth: { oidc: { issuer: issuer.issuer, audience: issuer.audience, jwks: issuer.jwks } },
    });
    const check = { validate: async () => {} };
    let error: unknown;
    try {
      new AuthProviders(options.auth, new Map([['oidc', check]]));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OptionError);
    expect((error as OptionError).option).toBe('auth.oidc');
    expect((error as OptionError).message).toContain('also registered by cloud.authProvider');
  });
});

describe('a provider’s tokens never reach the log', () => {
  it('the scrub filters id_token and idToken wherever they appear', () => {
    expect(scrub({ google: { id: '1', id_token: 'eyJ.x.y', idToken: 'eyJ.z' } })).toEqual({
      google: { id: '1', id_token: FILTERED, idToken: FILTERED },
    });
  });

  it('sign-ins, refusals and links write no token to the log', async () => {
    const lines: string[] = [];
    const destination = { write: (line: string) => void lines.push(line) };
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-test-'));
    const issuer = await testIssuer();
    const service = await createService(
      {
        ...KEYS,
        dataDir,
        port: 0,
        host: '127.0.0.1',
        logLevel: 'debug',
        rateLimit: [],
        cloud: CLOUD,
        auth: { oidc: { issuer: issuer.issuer, audience: issuer.audience, jwks: issuer.jwks } },
      },
      { log: createLogger('debug', destination) },
    );
    try {
      const { url } = await service.listen(0, '127.0.0.1');
      const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
        fetch(`${url}${p}`, {
          method: p.startsWith('/users/') ? 'PUT' : 'POST',
          headers: {
            'X-Backend-Application-Id': KEYS.appId,
            'X-Backend-REST-API-Key': KEYS.restAPIKey,
            'Content-Type': 'application/json',
            ...headers,
          },
          body: JSON.stringify(body),
        });
      const good = await issuer.token('log-sub');
      const expired = await issuer.token('log-sub', { exp: 1 });
      const ok = await post('/users', { authData: { oidc: { id: 'log-sub', id_token: good } } });
      expect(ok.status).toBe(201);
      const { objectId, sessionToken } = (await ok.json()) as { objectId: string; sessionToken: string };
      expect(
        (await post('/users', { authData: { oidc: { id: 'log-sub', id_token: expired } } })).status,
      ).toBe(404);
      expect(
        (await post('/users', { authData: { myprov: { id: 'log-p', token: 'secret-tok' } } })).status,
      ).toBe(400);
      const link = await post(
        `/users/${objectId}`,
        { authData: { myprov: { id: 'log-p', token: 'good-log-p' } } },
        { 'X-Backend-Session-Token': sessionToken },
      );
      expect(link.status).toBe(200);
      await service.close();
      const text = lines.join('\n');
      expect(text.length).toBeGreaterThan(0);
      for (const secret of [good, expired, 'secret-tok', 'good-log-p', sessionToken]) {
        expect(text).not.toContain(secret);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
