import { fileURLToPath } from 'node:url';
import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spendResetLink } from '../helpers/account-mail.ts';
import { type TestIssuer, testIssuer } from '../helpers/id-tokens.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * Users and auth data with the stock `parse` SDK (v8), unchanged, against the real service:
 * signing in with a provider (a cloud-registered one, and OpenID ID tokens checked against the
 * configured keys), linking and unlinking, 208 and 252, verifyPassword, loginAs, the sign-up
 * answer, and the defaults of revokeSessionOnPasswordReset and allowCustomObjectId. The exact
 * REST answers are pinned in server/test/users/providers.test.ts.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};
type SdkUser = ParseSDK.User & {
  _isLinked(provider: string): boolean;
  _unlinkFrom(provider: string, options?: unknown): Promise<SdkUser>;
};

const CLOUD = fileURLToPath(new URL('../fixtures/auth-cloud.ts', import.meta.url));

let t: TestService;
let oidc: TestIssuer;

const master = (method: string, path: string, body?: unknown) =>
  t.request(method, path, { as: 'master', body });
const authDataOf = async (userId: string) => (await master('GET', `/users/${userId}`)).json.authData;
const userCount = async () =>
  (await t.request('GET', '/classes/_User', { as: 'master', query: { count: 1, limit: 0 } })).json
    .count as number;

beforeAll(async () => {
  oidc = await testIssuer('https://accounts.issuer.test', 'sdk-client-id');
  t = await startService({
    cloud: CLOUD,
    auth: { oidc: { issuer: oidc.issuer, audience: oidc.audience, jwks: oidc.jwks } },
  });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  // One attempt: a failure must show up as a failure, not as a slow retry.
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
});

afterAll(async () => {
  await t?.close();
});

describe('signing in with an auth provider', () => {
  it('logInWith a cloud-registered provider signs up once, then logs in as the same user', async () => {
    const authData = { id: 'sdk-p1', token: 'good-sdk-p1' };
    const first = (await Parse.User.logInWith('myprov', { authData })) as SdkUser;
    expect(first.id).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(first.getSessionToken()).toMatch(/^r:[0-9a-f]{32}$/);
    expect(first._isLinked('myprov')).toBe(true);
    const again = await Parse.User.logInWith('myprov', { authData });
    expect(again.id).toBe(first.id);
    expect(again.getSessionToken()).not.toBe(first.getSessionToken());
    expect(await authDataOf(first.id!)).toEqual({ myprov: authData });
    // The adapter saw a sign-up, then a login of that user.
    const seen = await Parse.Cloud.run('lastProviderCall');
    expect(seen).toMatchObject({ triggerName: 'validateLogin', object: first.id, master: false, api: true });
  });

  it('a payload the provider refuses rejects with its text (141) and creates nothing', async () => {
    const before = await userCount();
    await expect(
      Parse.User.logInWith('myprov', { authData: { id: 'sdk-p2', token: 'forged' } }),
    ).rejects.toMatchObject({ code: 141, message: 'myprov refused the token' });
    expect(await userCount()).toBe(before);
  });

  it('an OpenID ID token is checked against the configured keys: issuer, audience, expiry, sub', async () => {
    const sub = 'oidc-subject-1';
    const user = await Parse.User.logInWith('oidc', {
      authData: { id: sub, id_token: await oidc.token(sub) },
    });
    expect(user.getSessionToken()).toMatch(/^r:[0-9a-f]{32}$/);
    const again = await Parse.User.logInWith('oidc', {
      authData: { id: sub, id_token: await oidc.token(sub) },
    });
    expect(again.id).toBe(user.id);

    const refused = async (authData: Record<string, unknown>, message: string) =>
      expect(Parse.User.logInWith('oidc', { authData })).rejects.toMatchObject({ code: 101, message });
    const hourAgo = Math.floor(Date.now() / 1000) - 3600;
    await refused({ id: sub, id_token: await oidc.token(sub, { exp: hourAgo }) }, 'jwt expired');
    await refused(
      { id: sub, id_token: await oidc.token(sub, { aud: 'another-app' }) },
      'jwt audience invalid. expected: sdk-client-id',
    );
    await refused(
      { id: sub, id_token: await oidc.token(sub, { iss: 'https://evil.test' }) },
      'id token not issued by correct provider - expected: https://accounts.issuer.test | from: https://evil.test',
    );
    await refused(
      { id: 'someone-else', id_token: await oidc.token(sub) },
      'auth data is invalid for this user.',
    );
    await refused({ id: sub }, 'id token is invalid for this user.');
    // Signed by another key with the same key id: the signature decides.
    const forger = await testIssuer(oidc.issuer, oidc.audience);
    await refused({ id: sub, id_token: await forger.token(sub, {}, { kid: oidc.kid }) }, 'invalid signature');
  });

  it('a provider that is not configured answers 252', async () => {
    const before = await userCount();
    await expect(
      Parse.User.logInWith('facebook', { authData: { id: 'fb-1', access_token: 'x' } }),
    ).rejects.toMatchObject({ code: 252, message: 'This authentication method is unsupported.' });
    expect(await userCount()).toBe(before);
  });

  it('a beforeLogin trigger refuses a provider login as it refuses a password login', async () => {
    const blocked = new Parse.User();
    blocked.set({ username: 'blocked', password: 'pw-blocked' });
    await blocked.signUp();
    await blocked.linkWith('myprov', { authData: { id: 'sdk-blocked', token: 'good-sdk-blocked' } });
    await expect(
      Parse.User.logInWith('myprov', { authData: { id: 'sdk-blocked', token: 'good-sdk-blocked' } }),
    ).rejects.toMatchObject({ code: 142, message: 'blocked by beforeLogin' });
  });
});

describe('linking and unlinking', () => {
  it('linkWith links a provider to a signed-up user, who then logs in with it; _unlinkFrom unlinks', async () => {
    const user = new Parse.User() as SdkUser;
    user.set({ username: 'linker', password: 'pw-linker' });
    await user.signUp();
    const authData = { id: 'sdk-link-1', token: 'good-sdk-link-1' };
    await user.linkWith('myprov', { authData });
    expect(user._isLinked('myprov')).toBe(true);
    expect(await authDataOf(user.id!)).toEqual({ myprov: authData });
    expect(await Parse.Cloud.run('lastProviderCall')).toMatchObject({
      triggerName: 'validateSetUp',
      object: user.id,
      user: user.id,
    });
    // (That login, from this SDK's installation, replaced the installation's session of the user.)
    const viaProvider = (await Parse.User.logInWith('myprov', { authData })) as SdkUser;
    expect(viaProvider.id).toBe(user.id);

    await viaProvider._unlinkFrom('myprov');
    expect(viaProvider._isLinked('myprov')).toBe(false);
    expect(await authDataOf(user.id!)).toBeUndefined();
    // The id now belongs to nobody: signing in with it makes a new user.
    const stranger = await Parse.User.logInWith('myprov', { authData });
    expect(stranger.id).not.toBe(user.id);
  });

  it('a provider id linked to another user answers 208 and links nothing', async () => {
    const owner = await Parse.User.logInWith('myprov', {
      authData: { id: 'sdk-taken', token: 'good-sdk-taken' },
    });
    const other = new Parse.User() as SdkUser;
    other.set({ username: 'latecomer', password: 'pw-late' });
    await other.signUp();
    await expect(
      other.linkWith('myprov', { authData: { id: 'sdk-taken', token: 'good-sdk-taken' } }),
    ).rejects.toMatchObject({ code: 208, message: 'this auth is already used' });
    expect(await authDataOf(other.id!)).toBeUndefined();
    expect(await authDataOf(owner.id!)).toEqual({ myprov: { id: 'sdk-taken', token: 'good-sdk-taken' } });
  });

  it('an anonymous user links a provider: the anonymous id is dropped in the same request', async () => {
    const anon = (await Parse.AnonymousUtils.logIn()) as SdkUser;
    expect(anon._isLinked('anonymous')).toBe(true);
    await anon.linkWith('oidc', {
      authData: { id: 'oidc-anon-upgrade', id_token: await oidc.token('oidc-anon-upgrade') },
    });
    expect(anon._isLinked('anonymous')).toBe(false);
    expect(Object.keys(await authDataOf(anon.id!))).toEqual(['oidc']);
    const back = await Parse.User.logInWith('oidc', {
      authData: { id: 'oidc-anon-upgrade', id_token: await oidc.token('oidc-anon-upgrade') },
    });
    expect(back.id).toBe(anon.id);
  });

  it('the master key links a user it holds no session of', async () => {
    const user = new Parse.User();
    user.set({ username: 'by-master', password: 'pw-by-master' });
    await user.signUp();
    const fetched = (await new Parse.Query(Parse.User).get(user.id!, { useMasterKey: true })) as SdkUser;
    await fetched.linkWith(
      'myprov',
      { authData: { id: 'sdk-by-master', token: 'good-sdk-by-master' } },
      { useMasterKey: true },
    );
    expect(await authDataOf(user.id!)).toEqual({
      myprov: { id: 'sdk-by-master', token: 'good-sdk-by-master' },
    });
  });
});

describe('the SDK suite’s user flows (with a current user)', () => {
  beforeAll(() => {
    Parse.User.enableUnsafeCurrentUser();
  });
  afterAll(async () => {
    await Parse.User.logOut();
    Parse.User.disableUnsafeCurrentUser();
  });

  it('links and unlinks an anonymous id with the user’s own session (no master key)', async () => {
    const user = new Parse.User() as SdkUser;
    user.setUsername('anon-linker');
    user.setPassword('pw-anon-linker');
    await user.signUp();
    await user.linkWith('anonymous', { authData: { id: 'sdk-anon-1234' } });
    expect(user._isLinked('anonymous')).toBe(true);
    expect(await authDataOf(user.id!)).toEqual({ anonymous: { id: 'sdk-anon-1234' } });
    await user._unlinkFrom('anonymous');
    expect(user._isLinked('anonymous')).toBe(false);
    expect(await authDataOf(user.id!)).toBeUndefined();
  });

  it('links with an adapter written for the incumbent (validateAuthData), and refuses with its text', async () => {
    const user = new Parse.User() as SdkUser;
    user.setUsername('myauth-linker');
    user.setPassword('pw-myauth');
    await user.signUp();
    await user.linkWith('myAuth', { authData: { id: '1234' } });
    expect(user._isLinked('myAuth')).toBe(true);
    await user._unlinkFrom('myAuth');
    expect(user._isLinked('myAuth')).toBe(false);
    await expect(Parse.User.logInWith('myAuth', { authData: { id: 'refused' } })).rejects.toMatchObject({
      code: 141,
      message: 'myAuth refused it',
    });
  });

  it('an update leaves the user with the attributes the incumbent gives it (no ACL, no echo)', async () => {
    const user = new Parse.User();
    await user.signUp({ password: 'asdf', email: 'sdk-asdf@example.com', username: 'sdk-zxcv' });
    user.set('username', 'sdk-test');
    await user.save();
    expect(Object.keys(user.attributes).sort()).toEqual([
      'createdAt',
      'email',
      'sessionToken',
      'updatedAt',
      'username',
    ]);
  });

  it('an anonymous user signs up with a name: its data stays, the anonymous id goes', async () => {
    const user = await Parse.AnonymousUtils.logIn();
    user.set('field', 'hello world');
    await user.save();
    expect(user.get('authData').anonymous).toBeDefined();
    user.setUsername('sdk-foo');
    user.setPassword('baz');
    await user.signUp();
    const result = await new Parse.Query(Parse.User).get(user.id!);
    expect(result.get('username')).toBe('sdk-foo');
    expect(result.get('authData')).toBeUndefined();
    expect(result.get('field')).toBe('hello world');
    expect(user.get('authData').anonymous).toBeUndefined();
  });
});

describe('passwords and sessions', () => {
  beforeAll(async () => {
    const u = new Parse.User();
    u.set({ username: 'vera', password: 'pw-vera', email: 'vera@example.com' });
    await u.signUp();
  });

  it('Parse.User.verifyPassword answers the user without a session; a wrong password is 101', async () => {
    // The SDK hands back the answer's JSON.
    const checked = (await Parse.User.verifyPassword('vera', 'pw-vera')) as unknown as Record<
      string,
      unknown
    >;
    expect(checked.username).toBe('vera');
    expect(checked.objectId).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(checked.sessionToken).toBeUndefined();
    expect(checked.password).toBeUndefined();
    await expect(Parse.User.verifyPassword('vera', 'wrong')).rejects.toMatchObject({
      code: 101,
      message: 'Invalid username/password.',
    });
    const logged = await Parse.User.logIn('vera', 'pw-vera');
    expect(((await logged.verifyPassword('pw-vera')) as unknown as { objectId: string }).objectId).toBe(
      logged.id,
    );
  });

  it('Parse.User.loginAs (master key) answers a session of the user; an unknown id is 101', async () => {
    const vera = await new Parse.Query(Parse.User).equalTo('username', 'vera').first({ useMasterKey: true });
    const as = await Parse.User.loginAs(vera!.id!);
    expect(as.id).toBe(vera!.id);
    expect(as.getSessionToken()).toMatch(/^r:[0-9a-f]{32}$/);
    const me = await Parse.User.me(as.getSessionToken()!);
    expect(me.id).toBe(vera!.id);
    await expect(Parse.User.loginAs('nobody1234')).rejects.toMatchObject({
      code: 101,
      message: 'user not found',
    });
  });

  it('_upgradeToRevocableSession replaces the session token by a new one', async () => {
    const user = new Parse.User();
    user.set({ username: 'upgrader', password: 'pw-upgrader' });
    await user.signUp();
    const old = user.getSessionToken()!;
    await (
      user as unknown as { _upgradeToRevocableSession(): Promise<ParseSDK.User> }
    )._upgradeToRevocableSession();
    expect(user.getSessionToken()).toMatch(/^r:[0-9a-f]{32}$/);
    expect(user.getSessionToken()).not.toBe(old);
    expect((await Parse.User.me(user.getSessionToken()!)).id).toBe(user.id);
    await expect(Parse.User.me(old)).rejects.toMatchObject({ code: 209 });
  });

  it('signUp answers what the incumbent answers: no ACL comes back to the object', async () => {
    const user = new Parse.User();
    user.set({ username: 'Mixed.Case', password: 'pw-mixed' });
    await user.signUp();
    expect(user.getACL()).toBeNull();
    // The name the service stored (lowercased) is what the object holds.
    expect(user.get('username')).toBe('mixed.case');
    expect(user.getSessionToken()).toMatch(/^r:[0-9a-f]{32}$/);
  });

  it('revokeSessionOnPasswordReset (default true): a reset through the mailed link ends every session', async () => {
    const user = new Parse.User();
    user.set({ username: 'resetter', password: 'pw-reset-old', email: 'resetter@example.com' });
    await user.signUp();
    const token = user.getSessionToken()!;
    await Parse.User.requestPasswordReset('resetter@example.com');
    await spendResetLink(t, 'resetter@example.com', 'pw-reset-new');
    await expect(Parse.User.me(token)).rejects.toMatchObject({ code: 209 });
    expect((await Parse.User.logIn('resetter', 'pw-reset-new')).getSessionToken()).toMatch(/^r:/);
  });

  it('allowCustomObjectId (default false): a client-chosen objectId is refused (105)', async () => {
    Parse.CoreManager.set('ALLOW_CUSTOM_OBJECT_ID', true);
    try {
      const user = new Parse.User();
      user.id = 'chosenId01';
      user.set({ username: 'chooser', password: 'pw-chooser' });
      await expect(user.signUp()).rejects.toMatchObject({
        code: 105,
        message: 'objectId is an invalid field name.',
      });
    } finally {
      Parse.CoreManager.set('ALLOW_CUSTOM_OBJECT_ID', false);
    }
  });
});
