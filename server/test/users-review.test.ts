import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

interface Mail {
  to: string;
  text: string;
}

async function mailsTo(t: TestService, to: string): Promise<Mail[]> {
  const res = await t.request('GET', '/devMailbox', { as: 'master' });
  return (res.json.results as Mail[]).filter((m) => m.to === to);
}

async function waitForMail(t: TestService, to: string, n = 1): Promise<Mail> {
  for (let i = 0; i < 100; i++) {
    const mails = await mailsTo(t, to);
    if (mails.length >= n) return mails[n - 1]!;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail #${n} to ${to}`);
}

function resetUrl(t: TestService, mail: Mail): string {
  const m = /\/apps\/[^/\s]+\/reset\?token=[0-9a-f]{64}/.exec(mail.text);
  if (!m) throw new Error(`no reset link in: ${mail.text}`);
  return `${t.url}${m[0]}`;
}

function newTotp() {
  const secret = new Secret({ size: 20 }).base32;
  const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
  return { secret, code: () => totp.generate() };
}

describe('users review: MFA on every login path', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('an MFA-enrolled user reached through a still-linked anonymous id must send the MFA token (211/210)', async () => {
    const { secret, code } = newTotp();
    const anon = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'rv-anon-mfa' } } },
    });
    expect(anon.status).toBe(201);
    // Upgrade without the unlink: the anonymous id stays a login path (docs/protocol.md#users-and-sessions).
    const up = await t.request('PUT', `/users/${anon.json.objectId}`, {
      sessionToken: anon.json.sessionToken,
      body: { username: 'rv-up', password: 'pw-up', email: 'rv-up@example.com' },
    });
    expect(up.status, up.text).toBe(200);
    const enrol = await t.request('PUT', `/users/${anon.json.objectId}`, {
      sessionToken: up.json.sessionToken,
      body: { authData: { mfa: { secret, token: code() } } },
    });
    expect(enrol.status, enrol.text).toBe(200);

    const sessionsBefore = await t.request('GET', '/classes/_Session', {
      as: 'master',
      query: { count: '1', limit: '0' },
    });
    const without = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'rv-anon-mfa' } } },
    });
    expect(without.json).toEqual({ code: 211, error: 'Missing additional authData mfa.token.' });
    const wrong = await t.request('POST', '/users', {
      body: {
        authData: {
          anonymous: { id: 'rv-anon-mfa' },
          mfa: { token: '000000' === code() ? '111111' : '000000' },
        },
      },
    });
    expect(wrong.json.code).toBe(210);
    const sessionsAfter = await t.request('GET', '/classes/_Session', {
      as: 'master',
      query: { count: '1', limit: '0' },
    });
    expect(sessionsAfter.json.count).toBe(sessionsBefore.json.count);

    const right = await t.request('POST', '/users', {
      body: { authData: { anonymous: { id: 'rv-anon-mfa' }, mfa: { token: code() } } },
    });
    expect(right.status, right.text).toBe(200);
    expect(right.json.objectId).toBe(anon.json.objectId);
    expect(right.json.sessionToken).toMatch(/^r:[0-9a-f]{32}$/);
  });

  it('two concurrent logins with the same recovery code: exactly one succeeds (compare-and-set)', async () => {
    const { secret, code } = newTotp();
    const s = await t.request('POST', '/users', { body: { username: 'rv-race', password: 'pw-race' } });
    const enrol = await t.request('PUT', `/users/${s.json.objectId}`, {
      sessionToken: s.json.sessionToken,
      body: { authData: { mfa: { secret, token: code() } } },
    });
    const recovery = enrol.json.authDataResponse.mfa.recovery as string[];
    const attempts = await Promise.all(
      Array.from({ length: 6 }, () =>
        t.request('POST', '/login', {
          body: { username: 'rv-race', password: 'pw-race', authData: { mfa: { token: recovery[0] } } },
        }),
      ),
    );
    expect(attempts.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of attempts.filter((a) => a.status !== 200)) expect(r.json.code).toBe(210);
    // The other codes still work, once each.
    const next = await t.request('POST', '/login', {
      body: { username: 'rv-race', password: 'pw-race', authData: { mfa: { token: recovery[1] } } },
    });
    expect(next.status).toBe(200);
    // The secret is never echoed, not even to the master key.
    const master = await t.request('GET', `/classes/_User/${s.json.objectId}`, { as: 'master' });
    expect(master.text).not.toContain(secret);
    expect(next.text).not.toContain(secret);
  });
});

describe('users review: reset links', () => {
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
    const url = resetUrl(t, await waitForMail(t, 'rv-old@example.com'));
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

describe('users review: batch write paths', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sign-up and updates in a batch lowercase username and email and keep them unique', async () => {
    const res = await t.request('POST', '/batch', {
      body: {
        requests: [
          {
            method: 'POST',
            path: '/api/users',
            body: { username: 'RvBatch', password: 'pw', email: 'RvB@Example.COM' },
          },
          { method: 'POST', path: '/classes/_User', body: { username: 'rvbatch', password: 'pw' } },
          {
            method: 'POST',
            path: '/users',
            body: { username: 'other', password: 'pw', email: 'rvb@example.com' },
          },
        ],
      },
    });
    expect(res.json[0].success).toMatchObject({ username: 'rvbatch', email: 'rvb@example.com' });
    expect(res.json[0].success).not.toHaveProperty('password');
    expect(res.json[1].error.code).toBe(202);
    expect(res.json[2].error.code).toBe(203);
    const id = res.json[0].success.objectId as string;
    const put = await t.request('POST', '/batch', {
      sessionToken: res.json[0].success.sessionToken,
      body: {
        requests: [
          { method: 'PUT', path: `/classes/_User/${id}`, body: { username: 'RvMixed', email: 'RvM@Y.com' } },
        ],
      },
    });
    expect(put.json[0].success).toBeDefined();
    const row = await t.request('GET', `/classes/_User/${id}`, { as: 'master' });
    expect(row.json).toMatchObject({ username: 'rvmixed', email: 'rvm@y.com' });
  });
});

describe('users review: verification links', () => {
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
