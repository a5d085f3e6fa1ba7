import { readdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../../src/config/options.ts';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

async function until<T>(probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (let i = 0; i < 150; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('timed out');
}

describe('email: the dev mailbox', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
    await t.request('POST', '/users', {
      body: { username: 'mia', password: 'pw', email: 'mia@example.com' },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('stores each mail as a JSON file in <dataDir>/mailbox and lists it at GET /devMailbox', async () => {
    const before = await t.request('GET', '/devMailbox', { as: 'master' });
    expect(before.json).toEqual({ results: [] });
    await t.request('POST', '/requestPasswordReset', { body: { email: 'mia@example.com' } });
    const mails = await until(async () => {
      const res = await t.request('GET', '/devMailbox', { as: 'master' });
      return res.json.results.length ? res.json.results : undefined;
    });
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: 'mia@example.com' });
    expect(Object.keys(mails[0]).sort()).toEqual(['html', 'sentAt', 'subject', 'text', 'to']);
    const dir = path.join(t.dataDir, 'mailbox');
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(JSON.parse(readFileSync(path.join(dir, files[0]!), 'utf8'))).toEqual(mails[0]);
  });

  it('is master-only', async () => {
    for (const as of ['rest', 'js'] as const) {
      const res = await t.request('GET', '/devMailbox', { as });
      expect(res.status).toBe(403);
      expect(res.json.code).toBe(119);
      expect(res.text).not.toContain('mia@example.com');
    }
    const login = await t.request('POST', '/login', { body: { username: 'mia', password: 'pw' } });
    const asUser = await t.request('GET', '/devMailbox', { sessionToken: login.json.sessionToken });
    expect(asUser.status).toBe(403);
  });
});

describe('email: SMTP through nodemailer', () => {
  let t: TestService;
  let smtp: SMTPServer;
  const received: Array<{ from: string; to: string[]; raw: string }> = [];

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks).toString('utf8'),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
    const port = (smtp.server.address() as AddressInfo).port;
    t = await startService({
      email: {
        adapter: 'smtp',
        from: 'accounts@bds.example',
        smtp: { host: '127.0.0.1', port, secure: false, ignoreTLS: true },
      },
    });
    await t.request('POST', '/users', {
      body: { username: 'noah', password: 'pw', email: 'noah@example.com' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it('delivers the reset mail to the SMTP server', async () => {
    const res = await t.request('POST', '/requestPasswordReset', { body: { email: 'noah@example.com' } });
    expect(res.json).toEqual({});
    const mail = await until(() => received[0]);
    expect(mail.from).toBe('accounts@bds.example');
    expect(mail.to).toEqual(['noah@example.com']);
    expect(mail.raw).toMatch(/^Subject: Password reset for test-app/m);
    expect(mail.raw).toMatch(/^To: noah@example\.com/m);
    expect(mail.raw.replace(/=\r?\n/g, '')).toMatch(
      new RegExp(`/apps/${KEYS.appId}/reset\\?token(=3D|=)[0-9a-f]{64}`),
    );
    const box = await t.request('GET', '/devMailbox', { as: 'master' });
    expect(box.json.results).toEqual([]);
  });

  it('the smtp adapter without smtp settings is a bad option', () => {
    expect(() => validateOptions({ ...KEYS, email: { adapter: 'smtp' } })).toThrow(/email/);
    expect(() => validateOptions({ ...KEYS, email: { adapter: 'pigeon' } })).toThrow(/email\.adapter/);
  });
});
