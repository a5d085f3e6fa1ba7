import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Secret, TOTP } from 'otpauth';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyPassword } from '../src/passwords.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  // The data dir goes only once its process has exited: it may still be writing there (the store's
  // WAL, a version, a log line) when SIGTERM arrives, and rmdir then finds the directory not empty.
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const late = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(late);
    }),
  );
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Runs bff/src/start.ts (what `npm start` runs) and waits for the console line. */
async function start(env: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-start-'));
  dirs.push(dataDir);
  const [servicePort, consolePort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ['--import', 'tsx', 'bff/src/start.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      BDS_DATA_DIR: dataDir,
      PORT: String(servicePort),
      BDS_CONSOLE_PORT: String(consolePort),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (/console login: .*\n/.test(out)) {
        clearInterval(timer);
        resolve();
      }
    }, 50);
    child.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`start exited with ${code}: ${out}`));
    });
  });
  const url = `http://localhost:${consolePort}`;
  const login = async (username: string, password: string) => {
    const res = await fetch(`${url}/bff/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Console-CSRF': '1', Origin: url },
      body: JSON.stringify({ username, password }),
    });
    const cookie = res.headers.getSetCookie()[0]?.split(';')[0] ?? '';
    return { status: res.status, cookie };
  };
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  /** Resolves once the output matches `pattern`. */
  const printed = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (pattern.test(out)) {
          clearInterval(timer);
          resolve();
        }
      }, 20);
      void exited.then(() => {
        clearInterval(timer);
        if (pattern.test(out)) resolve();
        else reject(new Error(`exited without printing ${pattern}: ${out}`));
      });
    });
  return { child, dataDir, url, servicePort, consolePort, out: () => out, login, exited, printed };
}

describe('npm start (service + console in one process)', () => {
  it('creates a demo console user on first start and prints the address and login', async () => {
    const s = await start({ BDS_CONSOLE_USER: '', BDS_CONSOLE_PASSWORD: '' });
    const out = s.out();
    expect(out).toContain(`[bds] console: ${s.url}`);
    const [, username, password] = /console login: (\w+) \/ (\S+)/.exec(out)!;
    const { status, cookie } = await s.login(username!, password!);
    expect(status).toBe(200);
    const apps = await fetch(`${s.url}/bff/apps`, { headers: { Cookie: cookie } });
    expect(apps.status).toBe(200);
    expect(JSON.stringify(await apps.json())).toContain('bds-dev');
    expect(statSync(path.join(s.dataDir, 'console-session-secret')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(s.dataDir, 'console-users.json')).mode & 0o777).toBe(0o600);
    // The service itself answers on its own port.
    const health = await fetch(`http://127.0.0.1:${s.servicePort}/health`);
    expect(health.status).toBe(200);
    // The demo cloud module is loaded: its function answers, its trigger and job are registered.
    const keys = JSON.parse(readFileSync(path.join(s.dataDir, 'keys.json'), 'utf8'));
    const api = `http://127.0.0.1:${s.servicePort}/api`;
    const hello = await fetch(`${api}/functions/hello`, {
      method: 'POST',
      headers: { 'X-Backend-Application-Id': keys.appId, 'X-Backend-REST-API-Key': keys.restAPIKey },
    });
    expect(await hello.json()).toEqual({ result: 'Hello stranger, from cloud code.' });
    const code = await fetch(`${api}/cloudCode`, {
      headers: { 'X-Backend-Application-Id': keys.appId, 'X-Backend-Master-Key': keys.masterKey },
    });
    expect(await code.json()).toMatchObject({
      functions: ['hello'],
      jobs: ['countPosts'],
      triggers: [{ className: 'Post', triggerName: 'beforeSave' }],
    });
  });

  it('passes BDS_* through and makes BDS_CONSOLE_USER the first admin', async () => {
    const masterKey = 'start-test-master-key-42';
    const s = await start({
      BDS_MASTER_KEY: masterKey,
      BDS_APP_ID: 'my-app',
      BDS_CONSOLE_USER: 'boss',
      BDS_CONSOLE_PASSWORD: 'a long enough password',
    });
    const out = s.out();
    expect(out).not.toContain(masterKey);
    expect(out).toContain('console login: boss');
    expect((await s.login('boss', 'a long enough password')).status).toBe(200);
    expect((await s.login('demo', 'anything')).status).toBe(401);
    const res = await fetch(`http://127.0.0.1:${s.servicePort}/api/classes/Post?limit=1`, {
      headers: { 'X-Backend-Application-Id': 'my-app', 'X-Backend-Master-Key': masterKey },
    });
    expect(res.status).toBe(200);
  });
});

describe('npm start shutdown', () => {
  it('on SIGTERM the console stops accepting, finishes its in-flight request (which the service still serves), then the service closes and the process exits 0', async () => {
    const s = await start({ BDS_CONSOLE_USER: 'boss', BDS_CONSOLE_PASSWORD: 'a long enough password' });
    const { cookie } = await s.login('boss', 'a long enough password');
    const body = JSON.stringify({ title: 'written after SIGTERM' });
    // A row create whose body is still on its way when SIGTERM arrives. `Expect: 100-continue`:
    // the 100 says the bff has the request (headers parsed, handler started).
    // (a keep-alive connection, as a browser's: the answer must end it, or the bff waits on it)
    const agent = new Agent({ keepAlive: true });
    const req = request(`${s.url}/bff/apps/bds-dev/classes/Post`, {
      method: 'POST',
      agent,
      headers: {
        Cookie: cookie,
        'Content-Type': 'application/json',
        'Content-Length': String(Buffer.byteLength(body)),
        'X-Console-CSRF': '1',
        Origin: s.url,
        Expect: '100-continue',
      },
    });
    const answer = new Promise<{ status: number; connection?: string; json: any }>((resolve, reject) => {
      req.once('error', reject);
      req.once('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.once('end', () =>
          resolve({ status: res.statusCode!, connection: res.headers.connection, json: JSON.parse(text) }),
        );
        res.once('error', reject);
      });
    });
    // (awaited below; a hang-up before then must not count as an unhandled rejection)
    answer.catch(() => undefined);
    await new Promise<void>((resolve) => req.once('continue', () => resolve()));
    req.write(body.slice(0, 10));

    s.child.kill('SIGTERM');
    await s.printed(/\[bds\] SIGTERM/);
    // No new connection is accepted...
    const refused = await fetch(`${s.url}/bff/session`).then(
      () => 'answered',
      (err: Error & { cause?: { code?: string } }) => err.cause?.code,
    );
    expect(refused).toBe('ECONNREFUSED');
    // ...and the service keeps serving until the console has drained.
    expect(s.out()).not.toContain('console closed');
    expect(s.out()).not.toContain('store closed');
    const health = await fetch(`http://127.0.0.1:${s.servicePort}/health`);
    expect(health.status).toBe(200);

    // The in-flight request completes: the service still took the write.
    req.end(body.slice(10));
    const { status, connection, json } = await answer;
    expect(status).toBe(201);
    expect(json.objectId).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(connection).toBe('close');
    expect(await s.exited).toBe(0);
    agent.destroy();
    const out = s.out();
    const order = [
      'SIGTERM: console stopped accepting',
      'console closed; draining the service',
      '[bds] store closed',
    ].map((line) => out.indexOf(line));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });
});

describe('console:user CLI', () => {
  // `add` writes into the data dir's users file: a fresh one per call, never the repository's ./data.
  const run = (args: string[], env: Record<string, string> = {}) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-cli-'));
    dirs.push(dataDir);
    return spawnSync(process.execPath, ['--import', 'tsx', 'bff/src/cli/console-user.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, BDS_CONSOLE_PASSWORD: '', BDS_DATA_DIR: dataDir, ...env },
      encoding: 'utf8',
    });
  };

  it('prints a scrypt entry the bff accepts', async () => {
    const res = run(['add', 'alice', '--read-only'], { BDS_CONSOLE_PASSWORD: 'alice password 123' });
    expect(res.status).toBe(0);
    const entry = JSON.parse(res.stdout);
    expect(entry).toMatchObject({ username: 'alice', role: 'read-only' });
    expect(entry.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await verifyPassword('alice password 123', entry.passwordHash)).toBe(true);
    expect(res.stdout + res.stderr).not.toContain('alice password 123');
  });

  it('with --mfa prints the TOTP secret and otpauth URI', () => {
    const res = run(['add', 'bob', '--mfa'], { BDS_CONSOLE_PASSWORD: 'bob password 1234' });
    expect(res.status).toBe(0);
    const entry = JSON.parse(res.stdout);
    expect(entry.role).toBe('admin');
    expect(entry.mfaSecret).toMatch(/^[A-Z2-7]{32}$/);
    expect(res.stderr).toContain(`TOTP secret: ${entry.mfaSecret}`);
    const uri = /otpauth:\/\/totp\/\S+/.exec(res.stderr)![0];
    expect(uri).toContain(`secret=${entry.mfaSecret}`);
    const totp = new TOTP({ secret: Secret.fromBase32(entry.mfaSecret) });
    expect(totp.validate({ token: totp.generate() })).toBe(0);
  });

  it('exits 2 on bad usage, a missing password or a bad name', () => {
    expect(run(['remove', 'x']).status).toBe(2);
    const noPassword = run(['add', 'carol']);
    expect(noPassword.status).toBe(2);
    expect(noPassword.stderr).toContain('BDS_CONSOLE_PASSWORD');
    expect(run(['add', 'bad name!'], { BDS_CONSOLE_PASSWORD: 'long enough password' }).status).toBe(2);
    expect(readFileSync(path.join(ROOT, 'bff/package.json'), 'utf8')).toContain('src/cli/console-user.ts');
  });
});
