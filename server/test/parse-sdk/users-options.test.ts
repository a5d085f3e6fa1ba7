import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spendResetLink } from '../helpers/account-mail.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * The account options apps rely on, with the stock `parse` SDK (v8) against one service that sets
 * each away from its default: preventLoginWithUnverifiedEmail (with verifyUserEmails),
 * revokeSessionOnPasswordReset false, allowCustomObjectId. (Their defaults are driven in
 * users.test.ts; the exact REST answers in server/test/users/providers.test.ts.)
 */

const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

let t: TestService;

beforeAll(async () => {
  t = await startService({
    verifyUserEmails: true,
    preventLoginWithUnverifiedEmail: true,
    revokeSessionOnPasswordReset: false,
    allowCustomObjectId: true,
  });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
  const res = await t.request('POST', '/schemas/Thing', {
    as: 'master',
    body: {
      className: 'Thing',
      fields: { n: { type: 'Number' } },
      classLevelPermissions: {
        create: { '*': true },
        update: { '*': true },
        get: { '*': true },
        find: { '*': true },
      },
    },
  });
  expect(res.status, res.text).toBe(200);
});

afterAll(async () => {
  Parse.CoreManager.set('ALLOW_CUSTOM_OBJECT_ID', false);
  await t?.close();
});

/** The verification link mailed to `to`, followed. */
async function verifyEmailOf(to: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const mails = (await t.request('GET', '/devMailbox', { as: 'master' })).json.results as Array<{
      to: string;
      text: string;
    }>;
    const token = /verify_email\?token=([0-9a-f]{64})/.exec(mails.find((m) => m.to === to)?.text ?? '')?.[1];
    if (token) {
      const res = await fetch(`${t.url}/apps/${KEYS.appId}/verify_email?token=${token}`);
      expect(res.status).toBe(200);
      return;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no verification mail to ${to}`);
}

describe('preventLoginWithUnverifiedEmail', () => {
  it('a sign-up gets no session, a login and verifyPassword answer 205 until the email is verified', async () => {
    const user = new Parse.User();
    user.set({ username: 'unverified', password: 'pw-unverified', email: 'unverified@example.com' });
    await user.signUp();
    expect(user.id).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(user.getSessionToken()).toBeUndefined();
    const notVerified = { code: 205, message: 'User email is not verified.' };
    await expect(Parse.User.logIn('unverified', 'pw-unverified')).rejects.toMatchObject(notVerified);
    await expect(Parse.User.verifyPassword('unverified', 'pw-unverified')).rejects.toMatchObject(notVerified);
    // The master key may check the password regardless.
    const checked = (await Parse.User.verifyPassword('unverified', 'pw-unverified', {
      useMasterKey: true,
      ignoreEmailVerification: true,
    })) as unknown as { objectId: string };
    expect(checked.objectId).toBe(user.id);
    // A wrong password still answers 101: the 205 tells only a caller who knows the password.
    await expect(Parse.User.logIn('unverified', 'wrong')).rejects.toMatchObject({ code: 101 });

    await verifyEmailOf('unverified@example.com');
    const logged = await Parse.User.logIn('unverified', 'pw-unverified');
    expect(logged.getSessionToken()).toMatch(/^r:[0-9a-f]{32}$/);
  });
});

describe('revokeSessionOnPasswordReset: false', () => {
  it('a reset through the mailed link and a password change keep the other sessions', async () => {
    const created = await t.request('POST', '/users', {
      as: 'master',
      body: { username: 'keeper', password: 'pw-keep-1', email: 'keeper@example.com', emailVerified: true },
    });
    expect(created.status, created.text).toBe(201);
    // Two devices: a login replaces the session of its own installation only.
    const first = await Parse.User.logIn('keeper', 'pw-keep-1', { installationId: 'keeper-device-1' });
    const second = await Parse.User.logIn('keeper', 'pw-keep-1', { installationId: 'keeper-device-2' });

    await Parse.User.requestPasswordReset('keeper@example.com');
    await spendResetLink(t, 'keeper@example.com', 'pw-keep-2');
    expect((await Parse.User.me(first.getSessionToken()!)).id).toBe(first.id);

    second.set('password', 'pw-keep-3');
    await second.save(null, { sessionToken: second.getSessionToken()! });
    expect((await Parse.User.me(first.getSessionToken()!)).id).toBe(first.id);
    expect((await Parse.User.logIn('keeper', 'pw-keep-3')).id).toBe(first.id);
  });
});

describe('allowCustomObjectId', () => {
  beforeAll(() => {
    Parse.CoreManager.set('ALLOW_CUSTOM_OBJECT_ID', true);
  });

  it('a client saves objects and signs up users with the objectIds it chose', async () => {
    const thing = new Parse.Object('Thing');
    thing.id = 'thing-0001';
    thing.set('n', 1);
    await thing.save();
    expect((await new Parse.Query('Thing').get('thing-0001')).get('n')).toBe(1);
    thing.set('n', 2);
    await thing.save();
    expect((await new Parse.Query('Thing').get('thing-0001')).get('n')).toBe(2);

    const user = new Parse.User();
    user.id = 'userChosen1';
    user.set({ username: 'chosen', password: 'pw-chosen', email: 'chosen@example.com' });
    await user.signUp();
    const row = await t.request('GET', '/users/userChosen1', { as: 'master' });
    expect(row.json.username).toBe('chosen');
  });

  it('an objectId that exists answers 137 and changes nothing', async () => {
    const dup = new Parse.Object('Thing');
    dup.id = 'thing-0001';
    dup.set('n', 99);
    await expect(dup.save()).rejects.toMatchObject({
      code: 137,
      message: 'A duplicate value for a field with unique values was provided.',
    });
    expect((await new Parse.Query('Thing').get('thing-0001')).get('n')).toBe(2);
  });
});
