import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Io, main, UsageError } from '../src/cli/console-user.ts';
import { UNREADABLE_GRACE_MS, USERS_FILE } from '../src/console-users.ts';
import { createBff } from '../src/index.ts';
import { SESSIONS_FILE } from '../src/session.ts';
import { type BffFetch, type StartedBff, startBff, TEST_PASSWORD } from './helpers/bff.ts';

/**
 * `npm run console:user` writes the data dir's console users file, and a running console applies
 * every change at once: a new user logs in, and a removed or changed user's sessions end.
 */
const EXPIRED = { code: 119, error: 'Session expired; log in again.' };
const INVALID = { code: 101, error: 'Invalid username or password.' };
const NEW_PASSWORD = 'newbie password 12345';

let t: StartedBff;
let usersFile: string;

/** Runs the command in-process against the bff's data dir; answers what it printed. */
async function consoleUser(args: string[], password = NEW_PASSWORD) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l), password: async () => password };
  await main(args, { BDS_DATA_DIR: t.bff.options.dataDir }, io);
  return { out: out.join('\n'), err: err.join('\n') };
}

const login = (username: string, password: string, totp?: string) =>
  t.request.post('/bff/login', { username, password, ...(totp ? { totp } : {}) });

const sessionRecords = () =>
  Object.values(
    JSON.parse(readFileSync(path.join(t.bff.options.dataDir, SESSIONS_FILE), 'utf8')).sessions,
  ) as Array<{ username: string }>;

beforeAll(async () => {
  t = await startBff();
  usersFile = path.join(t.bff.options.dataDir, USERS_FILE);
});
afterAll(async () => {
  await t?.close();
});

describe('npm run console:user against a running console', () => {
  let newbie: BffFetch;

  it('add writes the entry (0600) and the running console accepts the user at once', async () => {
    expect((await login('newbie', NEW_PASSWORD)).json).toEqual(INVALID);
    const { out, err } = await consoleUser(['add', 'newbie', '--read-only']);
    expect(JSON.parse(out)).toMatchObject({ username: 'newbie', role: 'read-only' });
    expect(err).toBe(
      `[bds] added console user "newbie" (read-only); a running console accepts them at once (${usersFile}).`,
    );
    expect(statSync(usersFile).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(usersFile, 'utf8'));
    expect(stored.consoleUsers.map((u: { username: string }) => u.username)).toEqual(['newbie']);
    expect(readFileSync(usersFile, 'utf8')).not.toContain(NEW_PASSWORD);
    newbie = await t.login('newbie', NEW_PASSWORD);
    expect((await newbie.get('/bff/session')).json).toEqual({
      user: { username: 'newbie', role: 'read-only' },
    });
    // The configured users are still there.
    expect((await login('admin', TEST_PASSWORD)).status).toBe(200);
  });

  it('refuses to add a user twice and names unknown users', async () => {
    await expect(consoleUser(['add', 'newbie'])).rejects.toThrow(
      new UsageError(`console user "newbie" exists in ${usersFile}; use passwd or mfa to change it`),
    );
    await expect(consoleUser(['remove', 'nobody'])).rejects.toThrow(
      new UsageError(`no console user "nobody" in ${usersFile}`),
    );
    await expect(consoleUser(['add', 'shorty'], 'short')).rejects.toThrow(
      new UsageError('the password must be at least 12 characters'),
    );
    await expect(consoleUser(['passwd', 'newbie', '--read-only'])).rejects.toThrow(
      new UsageError('--read-only does not apply to passwd'),
    );
    expect(JSON.parse(readFileSync(usersFile, 'utf8')).consoleUsers).toHaveLength(1);
  });

  it('passwd ends the sessions at once (the watch, before any request) and only the new password logs in', async () => {
    const other = await t.login('newbie', NEW_PASSWORD);
    const { err } = await consoleUser(['passwd', 'newbie'], 'a second password 678');
    expect(err).toBe(
      `[bds] changed the password of console user "newbie"; their console sessions end at once (${usersFile}).`,
    );
    // No request needed: the watch ended the records.
    await expect.poll(() => sessionRecords().some((r) => r.username === 'newbie')).toBe(false);
    expect((await newbie.get('/bff/session')).json).toEqual(EXPIRED);
    expect((await other.get('/bff/apps')).json).toEqual(EXPIRED);
    expect((await login('newbie', NEW_PASSWORD)).json).toEqual(INVALID);
    newbie = await t.login('newbie', 'a second password 678');
    expect((await newbie.get('/bff/session')).status).toBe(200);
  });

  it('mfa sets a new TOTP secret (sessions end, a login then asks for the code); --off removes it', async () => {
    const { err } = await consoleUser(['mfa', 'newbie']);
    const secret = /TOTP secret: ([A-Z2-7]+)/.exec(err)![1]!;
    expect(err).toContain(
      `[bds] set a new MFA secret for console user "newbie"; their console sessions end at once`,
    );
    expect((await newbie.get('/bff/session')).json).toEqual(EXPIRED);
    expect((await login('newbie', 'a second password 678')).json).toEqual({ mfaRequired: true });
    const code = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 }).generate();
    newbie = await t.login('newbie', 'a second password 678', code);
    expect((await newbie.get('/bff/session')).status).toBe(200);
    await consoleUser(['mfa', 'newbie', '--off']);
    expect((await newbie.get('/bff/session')).json).toEqual(EXPIRED);
    newbie = await t.login('newbie', 'a second password 678');
  });

  it('a role change made by hand in the file ends the sessions too', async () => {
    const stored = JSON.parse(readFileSync(usersFile, 'utf8'));
    stored.consoleUsers[0].role = 'admin';
    writeFileSync(usersFile, JSON.stringify(stored));
    expect((await newbie.get('/bff/session')).json).toEqual(EXPIRED);
    newbie = await t.login('newbie', 'a second password 678');
    expect((await newbie.get('/bff/session')).json).toEqual({ user: { username: 'newbie', role: 'admin' } });
  });

  it('list shows the users; remove ends every session of the user and refuses their login', async () => {
    expect((await consoleUser(['list'])).out).toBe('newbie\tadmin');
    const { err } = await consoleUser(['remove', 'newbie']);
    expect(err).toBe(
      `[bds] removed console user "newbie"; their console sessions end at once (${usersFile}).`,
    );
    expect((await newbie.get('/bff/session')).json).toEqual(EXPIRED);
    expect((await login('newbie', 'a second password 678')).json).toEqual(INVALID);
    expect((await consoleUser(['list'])).out).toBe(`No console users in ${usersFile}.`);
    expect(t.logs.some((l) => l.includes('console users changed: removed newbie'))).toBe(true);
  });

  it('a file user named like a configured one is left out (logged); the configured entry applies', async () => {
    const before = t.logs.length;
    await consoleUser(['add', 'admin'], 'an intruding password');
    expect((await login('admin', 'an intruding password')).json).toEqual(INVALID);
    expect((await login('admin', TEST_PASSWORD)).status).toBe(200);
    expect(t.logs.slice(before).join('\n')).toContain(
      `${usersFile}: console user \\"admin\\" is also in the options; the options' entry applies`,
    );
    await consoleUser(['remove', 'admin']);
  });

  it('a file that stops being valid refuses its users after a grace, and serves them again once fixed', async () => {
    await consoleUser(['add', 'carol']);
    const carol = await t.login('carol', NEW_PASSWORD);
    const good = readFileSync(usersFile, 'utf8');
    writeFileSync(usersFile, '{"consoleUsers": [');
    // Caught half written: the users stay until the grace has passed.
    expect((await carol.get('/bff/session')).status).toBe(200);
    await new Promise((r) => setTimeout(r, UNREADABLE_GRACE_MS + 200));
    expect((await carol.get('/bff/session')).json).toEqual(EXPIRED);
    expect((await login('carol', NEW_PASSWORD)).json).toEqual(INVALID);
    expect(t.logs.some((l) => l.includes(`${usersFile} is not valid JSON`))).toBe(true);
    // The admin of the options is not affected.
    expect((await login('admin', TEST_PASSWORD)).status).toBe(200);
    writeFileSync(usersFile, good);
    expect((await login('carol', NEW_PASSWORD)).status).toBe(200);
  });
});

describe('the console users file at start', () => {
  it('a file that is not valid stops the start, naming the file and the problem', async () => {
    writeFileSync(
      usersFile,
      JSON.stringify({ consoleUsers: [{ username: 'x y', passwordHash: 'h', role: 'admin' }] }),
    );
    await expect(
      createBff({ ...t.bff.options, port: 0 }, { logStream: { write() {} } as never }),
    ).rejects.toThrow(
      `option "${USERS_FILE}": ${usersFile}: consoleUsers.0.username: must be 1-64 letters, digits, "_", ".", "@" or "-"`,
    );
    writeFileSync(usersFile, JSON.stringify({ consoleUsers: [] }));
  });
});
