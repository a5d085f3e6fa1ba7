import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from './helpers/service.ts';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  sentAt: string;
}

export async function mailbox(t: TestService): Promise<Mail[]> {
  const res = await t.request('GET', '/devMailbox', { as: 'master' });
  if (res.status !== 200) throw new Error(res.text);
  return res.json.results as Mail[];
}

/** Mail is sent after the answer: wait for the n-th mail to `to`. */
export async function waitForMail(t: TestService, to: string, n = 1): Promise<Mail> {
  for (let i = 0; i < 100; i++) {
    const mails = (await mailbox(t)).filter((m) => m.to === to);
    if (mails.length >= n) return mails[n - 1]!;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail #${n} to ${to}`);
}

/** Mail is written after the answer: give the background work (one lookup) time before checking absence. */
const settle = () => new Promise((r) => setTimeout(r, 150));

const linkIn = (mail: Mail, page: string) => {
  const m = new RegExp(`https?://\\S+/apps/[^/]+/${page}\\?token=[0-9a-f]{64}`).exec(mail.text);
  if (!m) throw new Error(`no ${page} link in: ${mail.text}`);
  return m[0];
};

/** The service's own address for a link (the mail names the public URL; the test talks to 127.0.0.1). */
const local = (t: TestService, link: string) => `${t.url}${link.slice(link.indexOf('/apps/'))}`;

function postForm(url: string, fields: Record<string, string>) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

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
