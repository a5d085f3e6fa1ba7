import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BdsError, ErrorCode } from '../../src/kernel/errors.ts';
import { Users } from '../../src/users/service.ts';
import { COL, escapeHtml } from '../../src/users/shared.ts';
import {
  linkIn,
  local,
  type Mail,
  mailbox,
  mailedLink,
  postForm,
  settle,
  waitForMail,
} from '../helpers/mailbox.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';
import { BAD_EMAIL, refusal } from '../helpers/users.ts';

/**
 * The links the service mails (password reset, email verification) and the pages they open: what
 * sends them, when they work, expire or end, and the background work that sends the mail.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const tokenIn = (mail: Mail, page: string): string => {
  const m = new RegExp(`/apps/[^/\\s]+/${page}\\?token=([0-9a-f]{64})`).exec(mail.text);
  if (!m) throw new Error(`no ${page} link in: ${mail.text}`);
  return m[1]!;
};

describe('password reset', () => {
  let t: TestService;
  let userId: string;
  let token: string;

  beforeAll(async () => {
    t = await startService({ passwordResetTokenValidity: 2 });
    const res = await t.request('POST', '/users', {
      body: { username: 'rita', password: 'old-pw', email: 'Rita@example.com' },
    });
    userId = res.json.objectId;
    token = res.json.sessionToken;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers {} for a known and an unknown email alike; only the known one gets mail', async () => {
    const unknown = await t.request('POST', '/requestPasswordReset', {
      body: { email: 'nobody@example.com' },
    });
    expect(unknown.status).toBe(200);
    expect(unknown.json).toEqual({});
    const known = await t.request('POST', '/requestPasswordReset', { body: { email: 'RITA@example.com' } });
    expect(known.status).toBe(200);
    expect(known.json).toEqual({});
    const mail = await waitForMail(t, 'rita@example.com');
    expect(mail.subject).toContain('Password reset');
    expect(mail.html).toContain('/reset?token=');
    await settle();
    expect((await mailbox(t)).some((m) => m.to === 'nobody@example.com')).toBe(false);
  });

  it('a missing or malformed email is refused without touching any account', async () => {
    const missing = await t.request('POST', '/requestPasswordReset', { body: {} });
    expect(missing.json.code).toBe(204);
    const bad = await t.request('POST', '/requestPasswordReset', { body: { email: 'nope' } });
    expect(bad.json.code).toBe(125);
  });

  it('the link opens a script-free form; posting it sets the password once and ends every session', async () => {
    const mail = await waitForMail(t, 'rita@example.com');
    const url = local(t, linkIn(mail, 'reset'));
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    expect(html).toContain('<form method="post"');
    expect(html).not.toMatch(/<script/i);
    const tokenValue = new URL(url).searchParams.get('token')!;

    const differ = await postForm(url.split('?')[0]!, {
      token: tokenValue,
      new_password: 'new-pw',
      confirm_password: 'other',
    });
    expect(differ.status).toBe(400);
    expect(await differ.text()).toContain('differ');

    const done = await postForm(url.split('?')[0]!, {
      token: tokenValue,
      new_password: 'new-pw',
      confirm_password: 'new-pw',
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Password changed');
    expect((await t.request('GET', '/users/me', { sessionToken: token })).json.code).toBe(209);
    expect(
      (await t.request('POST', '/login', { body: { username: 'rita', password: 'old-pw' } })).json.code,
    ).toBe(101);
    const login = await t.request('POST', '/login', { body: { username: 'rita', password: 'new-pw' } });
    expect(login.json.objectId).toBe(userId);

    const reuse = await postForm(url.split('?')[0]!, {
      token: tokenValue,
      new_password: 'third-pw',
      confirm_password: 'third-pw',
    });
    expect(reuse.status).toBe(400);
    expect((await fetch(url)).status).toBe(400);
    expect(
      (await t.request('POST', '/login', { body: { username: 'rita', password: 'new-pw' } })).status,
    ).toBe(200);
  });

  it('a link expires', async () => {
    await t.request('POST', '/requestPasswordReset', { body: { email: 'rita@example.com' } });
    const mail = await waitForMail(t, 'rita@example.com', 2);
    const url = local(t, linkIn(mail, 'reset'));
    expect((await fetch(url)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2100));
    expect((await fetch(url)).status).toBe(400);
    const post = await postForm(url.split('?')[0]!, {
      token: new URL(url).searchParams.get('token')!,
      new_password: 'late',
      confirm_password: 'late',
    });
    expect(post.status).toBe(400);
    expect(
      (await t.request('POST', '/login', { body: { username: 'rita', password: 'new-pw' } })).status,
    ).toBe(200);
  });

  it('a forged token or another app id gets no form', async () => {
    expect((await fetch(`${t.url}/apps/${KEYS.appId}/reset?token=${'0'.repeat(64)}`)).status).toBe(400);
    expect((await fetch(`${t.url}/apps/other-app/reset?token=${'0'.repeat(64)}`)).status).toBe(404);
  });
});

describe('email verification', () => {
  let t: TestService;
  let userId: string;

  beforeAll(async () => {
    t = await startService({ verifyUserEmails: true });
    const res = await t.request('POST', '/users', {
      body: { username: 'vera', password: 'pw', email: 'vera@example.com' },
    });
    userId = res.json.objectId;
    expect(res.json.emailVerified).toBe(false);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sign-up mails a link that sets emailVerified, once', async () => {
    const mail = await waitForMail(t, 'vera@example.com');
    expect(mail.subject).toContain('verify');
    const url = local(t, linkIn(mail, 'verify_email'));
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).not.toMatch(/<script/i);
    const row = await t.request('GET', `/classes/_User/${userId}`, { as: 'master' });
    expect(row.json.emailVerified).toBe(true);
    expect((await fetch(url)).status).toBe(400);
  });

  it('POST /verificationEmailRequest answers {} and mails only unverified known addresses', async () => {
    const user = await t.request('POST', '/users', {
      body: { username: 'walt', password: 'pw', email: 'walt@example.com' },
    });
    await waitForMail(t, 'walt@example.com');
    for (const email of ['walt@example.com', 'vera@example.com', 'ghost@example.com']) {
      const res = await t.request('POST', '/verificationEmailRequest', { body: { email } });
      expect(res.json).toEqual({});
    }
    const second = await waitForMail(t, 'walt@example.com', 2);
    const url = local(t, linkIn(second, 'verify_email'));
    expect((await fetch(url)).status).toBe(200);
    const row = await t.request('GET', `/classes/_User/${user.json.objectId}`, { as: 'master' });
    expect(row.json.emailVerified).toBe(true);
    await settle();
    const mails = await mailbox(t);
    expect(mails.filter((m) => m.to === 'vera@example.com')).toHaveLength(1);
    expect(mails.some((m) => m.to === 'ghost@example.com')).toBe(false);
  });

  it('changing the email resets emailVerified and mails the new address', async () => {
    const login = await t.request('POST', '/login', { body: { username: 'vera', password: 'pw' } });
    const res = await t.request('PUT', `/users/${userId}`, {
      sessionToken: login.json.sessionToken,
      body: { email: 'vera2@example.com' },
    });
    expect(res.status, res.text).toBe(200);
    const me = await t.request('GET', '/users/me', { sessionToken: login.json.sessionToken });
    expect(me.json.emailVerified).toBe(false);
    await waitForMail(t, 'vera2@example.com');
  });
});

describe('background mail work', () => {
  let t: TestService;
  let users: Users;
  beforeAll(async () => {
    t = await startService();
    users = new Users(t.service.data, { send: async () => {} }, () => 'http://x');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('idle() waits for the work still running, also work started while it waits', async () => {
    const done: string[] = [];
    const later = (name: string, ms: number, next?: () => void) => async () => {
      await new Promise((r) => setTimeout(r, ms));
      done.push(name);
      next?.();
    };
    users.background(later('first', 30, () => users.background(later('second', 30))));
    await users.idle();
    expect(done).toEqual(['first', 'second']);
  });

  it('inside a transaction the work starts only after the commit', async () => {
    const done: string[] = [];
    await t.service.data.core.store.transaction(async () => {
      users.background(async () => {
        done.push('ran');
      });
      await new Promise((r) => setTimeout(r, 20));
      expect(done).toEqual([]);
    });
    await users.idle();
    expect(done).toEqual(['ran']);
  });

  it('a failed task is logged with its message only; a non-Error as "error"', async () => {
    const logged = vi.spyOn(t.service.data.core.log, 'error').mockImplementation(() => undefined);
    users.background(async () => {
      throw new Error('smtp down for a@example.com');
    });
    await users.idle();
    expect(logged).toHaveBeenCalledWith(
      { err: 'smtp down for a@example.com' },
      'background mail task failed',
    );
    logged.mockClear();
    users.background(() => Promise.reject('a string'));
    await users.idle();
    expect(logged).toHaveBeenCalledWith({ err: 'error' }, 'background mail task failed');
  });

  it('escapeHtml writes each of & < > " \' as a numeric entity', () => {
    expect(escapeHtml(`a&b<c>d"e'f`)).toBe('a&#38;b&#60;c&#62;d&#34;e&#39;f');
  });

  it('the verification mail escapes the username in its HTML; the stored token is the hex SHA-256 of the link', async () => {
    const t2 = await startService({ verifyUserEmails: true });
    try {
      const res = await t2.request('POST', '/users', {
        body: { username: 'a<b&c', password: 'pw-html-1', email: 'html@example.com' },
      });
      expect(res.status, res.text).toBe(201);
      const mail = await waitForMail(t2, 'html@example.com');
      expect(mail.html).toContain('<p>Hi a&#60;b&#38;c,</p>');
      expect(mail.text).toContain('Hi a<b&c,');
      const token = tokenIn(mail, 'verify_email');
      const [row] = await t2.service.data.lookups.internal('_User', 'objectId', res.json.objectId, [
        COL.verifyToken,
      ]);
      expect(row![COL.verifyToken]).toBe(createHash('sha256').update(token).digest('hex'));
    } finally {
      await t2.close();
    }
  });
});

describe('email changes and mail links', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ verifyUserEmails: true, passwordHashCost: 12 });
  });
  afterAll(async () => {
    await t?.close();
  });
  const put = (id: string, body: unknown, sessionToken?: string) =>
    t.request('PUT', `/users/${id}`, sessionToken ? { sessionToken, body } : { as: 'master', body });
  const mailsTo = async (to: string) => (await mailbox(t)).filter((m) => m.to === to).length;
  const verified = async (id: string) =>
    (await t.request('GET', `/users/${id}`, { as: 'master' })).json.emailVerified as unknown;

  it('the master key signs up with emailVerified as sent; without it the address is unverified and mailed', async () => {
    const set = await t.request('POST', '/users', {
      as: 'master',
      body: { username: 'm-verified', password: 'pw', email: 'm-verified@example.com', emailVerified: true },
    });
    expect(set.status, set.text).toBe(201);
    expect(await verified(set.json.objectId)).toBe(true);
    const unset = await t.request('POST', '/users', {
      as: 'master',
      body: { username: 'm-unset', password: 'pw', email: 'm-unset@example.com' },
    });
    expect(await verified(unset.json.objectId)).toBe(false);
    await waitForMail(t, 'm-unset@example.com');
    await settle();
    expect(await mailsTo('m-verified@example.com')).toBe(0);
  });

  it('updates that keep the email leave verification, links and the mailbox alone', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'keeper', password: 'pw-keep', email: 'keeper@example.com' },
    });
    const id = res.json.objectId as string;
    const verifyToken = tokenIn(await waitForMail(t, 'keeper@example.com'), 'verify_email');
    const page = await fetch(`${t.url}/apps/test-app/verify_email?token=${verifyToken}`);
    expect(page.status).toBe(200);
    expect(await verified(id)).toBe(true);
    expect(
      (await t.request('POST', '/requestPasswordReset', { body: { email: 'keeper@example.com' } })).status,
    ).toBe(200);
    const resetToken = tokenIn(await waitForMail(t, 'keeper@example.com', 2), 'reset');
    const before = (await mailbox(t)).length;

    expect((await put(id, { nickname: 'k' }, res.json.sessionToken)).status).toBe(200);
    expect((await put(id, { email: 'keeper@example.com' }, res.json.sessionToken)).status).toBe(200);
    expect((await put(id, { nickname: 'k2' })).status).toBe(200);
    await settle();
    expect((await mailbox(t)).length).toBe(before);
    expect(await verified(id)).toBe(true);

    const done = await postForm(`${t.url}/apps/test-app/reset`, {
      token: resetToken,
      new_password: 'pw-after',
      confirm_password: 'pw-after',
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Password changed');
  });

  it('a changed email by the user or the master (without emailVerified) is unverified and mailed', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'mover', password: 'pw-move', email: 'mover1@example.com' },
    });
    const id = res.json.objectId as string;
    await waitForMail(t, 'mover1@example.com');
    expect((await put(id, { email: 'mover2@example.com', emailVerified: true })).status).toBe(200);
    expect(await verified(id)).toBe(true);
    await settle();
    expect(await mailsTo('mover2@example.com')).toBe(0);
    expect((await put(id, { email: 'mover3@example.com' })).status).toBe(200);
    expect(await verified(id)).toBe(false);
    const mail = await waitForMail(t, 'mover3@example.com');
    expect(mail.text).toContain('Hi mover,');
  });

  it('reset and verification requests name a missing or malformed email', async () => {
    for (const path of ['/requestPasswordReset', '/verificationEmailRequest']) {
      for (const body of [{}, { email: '' }, { email: null }]) {
        const res = await t.request('POST', path, { body });
        expect(res.status).toBe(400);
        expect(res.json).toEqual(refusal(204, 'you must provide an email'));
      }
      for (const body of [{ email: 'nope' }, { email: 5 }]) {
        const res = await t.request('POST', path, { body });
        expect(res.json).toEqual(BAD_EMAIL);
      }
    }
  });

  it('an unknown well-formed reset token changes nothing; a used one neither', async () => {
    const bad = await postForm(`${t.url}/apps/test-app/reset`, {
      token: 'a'.repeat(64),
      new_password: 'pw-x',
      confirm_password: 'pw-x',
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).not.toContain('Password changed');
  });

  it('two uses of one verification link at once: exactly one verifies', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'verif-twice', password: 'pw-vt', email: 'verif-twice@example.com' },
    });
    const token = tokenIn(await waitForMail(t, 'verif-twice@example.com'), 'verify_email');
    const url = `${t.url}/apps/test-app/verify_email?token=${token}`;
    const answers = await Promise.all([fetch(url), fetch(url), fetch(url)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400]);
    expect(await verified(res.json.objectId)).toBe(true);
    expect((await fetch(url)).status).toBe(400);
  });

  it('resetPassword and verifyEmail with an unknown token change nothing; one token verifies once', async () => {
    const users = new Users(t.service.data, { send: async () => {} }, () => 'http://x');
    expect(await users.resetPassword('b'.repeat(64), 'pw-x')).toBe(false);
    expect(await users.verifyEmail('b'.repeat(64))).toBe(false);
    const res = await t.request('POST', '/users', {
      body: { username: 'verif-direct', password: 'pw-vd', email: 'verif-direct@example.com' },
    });
    const token = tokenIn(await waitForMail(t, 'verif-direct@example.com'), 'verify_email');
    const results = await Promise.all([
      users.verifyEmail(token),
      users.verifyEmail(token),
      users.verifyEmail(token),
    ]);
    expect(results.sort()).toEqual([false, false, true]);
    expect(await verified(res.json.objectId)).toBe(true);
  });

  it('a store failure while using a link is not taken for a used link: it is raised', async () => {
    const users = new Users(t.service.data, { send: async () => {} }, () => 'http://x');
    await t.request('POST', '/users', {
      body: { username: 'store-fail', password: 'pw-sf', email: 'store-fail@example.com' },
    });
    const verifyToken = tokenIn(await waitForMail(t, 'store-fail@example.com'), 'verify_email');
    await t.request('POST', '/requestPasswordReset', { body: { email: 'store-fail@example.com' } });
    const resetToken = tokenIn(await waitForMail(t, 'store-fail@example.com', 2), 'reset');
    const writes = t.service.data.writes;
    for (const failure of [
      new BdsError(ErrorCode.INTERNAL_SERVER_ERROR, 'disk full'),
      new Error('io error'),
    ]) {
      vi.spyOn(writes, 'update').mockRejectedValueOnce(failure);
      await expect(users.verifyEmail(verifyToken)).rejects.toBe(failure);
      vi.spyOn(writes, 'update').mockRejectedValueOnce(failure);
      await expect(users.resetPassword(resetToken, 'pw-new')).rejects.toBe(failure);
      vi.restoreAllMocks();
    }
    // Both links still work once the store does.
    expect(await users.verifyEmail(verifyToken)).toBe(true);
    expect(await users.resetPassword(resetToken, 'pw-new')).toBe(true);
  });

  it('two uses of one reset link at once: exactly one changes the password', async () => {
    const res = await t.request('POST', '/users', {
      body: { username: 'twice', password: 'pw-twice', email: 'twice@example.com' },
    });
    expect(res.status).toBe(201);
    await t.request('POST', '/requestPasswordReset', { body: { email: 'twice@example.com' } });
    const mails = async () =>
      (await mailbox(t)).filter((m) => m.to === 'twice@example.com' && m.text.includes('/reset?'));
    for (let i = 0; i < 100 && (await mails()).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const token = tokenIn((await mails())[0]!, 'reset');
    const answers = await Promise.all(
      ['pw-one', 'pw-two'].map((p) =>
        postForm(`${t.url}/apps/test-app/reset`, { token, new_password: p, confirm_password: p }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    const winner = answers[0]!.status === 200 ? 'pw-one' : 'pw-two';
    const loser = winner === 'pw-one' ? 'pw-two' : 'pw-one';
    expect(
      (await t.request('POST', '/login', { body: { username: 'twice', password: winner } })).status,
    ).toBe(200);
    expect((await t.request('POST', '/login', { body: { username: 'twice', password: loser } })).status).toBe(
      404,
    );
  });
});

describe('reset links', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a reset link mailed to the old address stops working once the email changes', async () => {
    const s = await t.request('POST', '/users', {
      body: { username: 'rv-mover', password: 'pw-old', email: 'rv-old@example.com' },
    });
    await t.request('POST', '/requestPasswordReset', { body: { email: 'rv-old@example.com' } });
    const url = local(t, linkIn(await waitForMail(t, 'rv-old@example.com'), 'reset'));
    expect((await fetch(url)).status).toBe(200);
    const change = await t.request('PUT', `/users/${s.json.objectId}`, {
      sessionToken: s.json.sessionToken,
      body: { email: 'rv-new@example.com' },
    });
    expect(change.status, change.text).toBe(200);
    expect((await fetch(url)).status).toBe(400);
    const token = new URL(url).searchParams.get('token')!;
    const post = await fetch(url.split('?')[0]!, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token,
        new_password: 'pw-hijack',
        confirm_password: 'pw-hijack',
      }).toString(),
    });
    expect(post.status).toBe(400);
    const login = await t.request('POST', '/login', { body: { username: 'rv-mover', password: 'pw-old' } });
    expect(login.status).toBe(200);
  });

  it('the account pages never reflect query input and carry a strict CSP', async () => {
    const evil = encodeURIComponent('<script>alert(1)</script>');
    for (const path of [
      `/apps/test-app/reset?token=${evil}`,
      `/apps/test-app/verify_email?token=${evil}&username=${evil}`,
    ]) {
      const res = await fetch(`${t.url}${path}`);
      const html = await res.text();
      expect(res.status).toBe(400);
      expect(html).not.toMatch(/<script/i);
      expect(html).not.toContain('alert(1)');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(res.headers.get('location')).toBeNull();
    }
  });
});

describe('verification links', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ verifyUserEmails: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a verification link for the old address cannot verify an address the master set later', async () => {
    const s = await t.request('POST', '/users', {
      body: { username: 'rv-verify', password: 'pw', email: 'rv-v-old@example.com' },
    });
    expect(s.status).toBe(201);
    const mail = await waitForMail(t, 'rv-v-old@example.com');
    const m = /\/apps\/[^/\s]+\/verify_email\?token=[0-9a-f]{64}/.exec(mail.text);
    expect(m).not.toBeNull();
    const change = await t.request('PUT', `/users/${s.json.objectId}`, {
      as: 'master',
      body: { email: 'rv-v-new@example.com', emailVerified: false },
    });
    expect(change.status, change.text).toBe(200);
    const page = await fetch(`${t.url}${m![0]}`);
    expect(page.status).toBe(400);
    const row = await t.request('GET', `/classes/_User/${s.json.objectId}`, { as: 'master' });
    expect(row.json).toMatchObject({ email: 'rv-v-new@example.com', emailVerified: false });
  });
});

describe('a verification link expires', () => {
  const VALIDITY = 600; // seconds
  let t: TestService;

  beforeAll(async () => {
    t = await startService({
      verifyUserEmails: true,
      emailVerifyTokenValidity: VALIDITY,
      passwordHashCost: 12,
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  afterAll(async () => {
    vi.useRealTimers();
    await t?.close();
  });

  it('the link works until its validity ends and never after (checked at the instant, faked Date)', async () => {
    const start = Date.parse('2030-06-01T00:00:00.000Z');
    // Only Date is faked: timers stay real. The service runs in this process and reads this Date.
    vi.useFakeTimers({ toFake: ['Date'], now: start });
    const late = await t.request('POST', '/users', {
      body: { username: 'late', password: 'pw', email: 'late@example.com' },
    });
    expect(late.status, late.text).toBe(201);
    const early = await t.request('POST', '/users', {
      body: { username: 'early', password: 'pw', email: 'early@example.com' },
    });
    expect(early.status, early.text).toBe(201);
    const lateLink = await mailedLink(t, 'late@example.com', 'verify_email');
    const earlyLink = await mailedLink(t, 'early@example.com', 'verify_email');

    vi.setSystemTime(start + VALIDITY * 1000 - 1);
    const ok = await fetch(earlyLink);
    expect(ok.status).toBe(200);
    expect(
      (await t.request('GET', `/classes/_User/${early.json.objectId}`, { as: 'master' })).json.emailVerified,
    ).toBe(true);

    vi.setSystemTime(start + VALIDITY * 1000);
    const expired = await fetch(lateLink);
    expect(expired.status).toBe(400);
    expect(await expired.text()).toContain('This link is invalid, was already used, or has expired.');
    expect(
      (await t.request('GET', `/classes/_User/${late.json.objectId}`, { as: 'master' })).json.emailVerified,
    ).toBe(false);
  });
});
