import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  credentialOf,
  MAX_SESSIONS_PER_USER,
  resolveSessionSecret,
  SESSION_SECRET_FILE,
  SESSIONS_FILE,
  SessionStore,
} from '../src/session.ts';

/**
 * The console session's stores on disk (bff/src/session.ts): the session secret file, and how the
 * records file is loaded, pruned and bounded; the credential a session is bound to.
 */

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bds-session-store-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('credentialOf', () => {
  it('is the first 22 base64url characters of sha256(passwordHash NUL mfaSecret)', () => {
    const expected = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 22);
    expect(credentialOf({ passwordHash: 'h1' })).toBe(expected('h1\0'));
    expect(credentialOf({ passwordHash: 'h1', mfaSecret: 'S' })).toBe(expected('h1\0S'));
    expect(credentialOf({ passwordHash: 'h1' })).toHaveLength(22);
  });
});

describe('resolveSessionSecret', () => {
  it('uses the configured secret and writes no file', () => {
    const dataDir = tempDir();
    const secret = 'x'.repeat(40);
    expect(resolveSessionSecret({ sessionSecret: secret, dataDir })).toBe(secret);
    expect(() => statSync(path.join(dataDir, SESSION_SECRET_FILE))).toThrow(/ENOENT/);
  });

  it('generates one secret into <dataDir>/console-session-secret (0600) and keeps it', () => {
    const dataDir = path.join(tempDir(), 'nested', 'data');
    const first = resolveSessionSecret({ dataDir });
    expect(SESSION_SECRET_FILE).toBe('console-session-secret');
    const file = path.join(dataDir, 'console-session-secret');
    expect(readFileSync(file, 'utf8')).toBe(`${first}\n`);
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(resolveSessionSecret({ dataDir })).toBe(first);
  });

  it('tightens a readable secret file to 0600 and trims it', () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, SESSION_SECRET_FILE);
    writeFileSync(file, `  ${'s'.repeat(32)}  \n`);
    chmodSync(file, 0o644);
    expect(resolveSessionSecret({ dataDir })).toBe('s'.repeat(32));
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('refuses a secret shorter than 32 characters and any error other than a missing file', () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, SESSION_SECRET_FILE);
    writeFileSync(file, `${'s'.repeat(31)}\n`, { mode: 0o600 });
    expect(() => resolveSessionSecret({ dataDir })).toThrow(
      `${file} holds a session secret shorter than 32 characters`,
    );
    const other = tempDir();
    mkdirSync(path.join(other, SESSION_SECRET_FILE));
    expect(() => resolveSessionSecret({ dataDir: other })).toThrow(/EISDIR/);
  });
});

describe('SessionStore', () => {
  const record = (username: string, createdAt: number, credential = 'c') => ({
    username,
    createdAt,
    credential,
  });

  it('loads only well-formed, valid records, and rewrites the file only when it dropped some', () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, SESSIONS_FILE);
    const good = { a: record('ann', 1), b: record('bob', 2) };
    const pretty = `${JSON.stringify({ sessions: good }, null, 2)}\n`;
    writeFileSync(file, pretty);
    const store = new SessionStore(dataDir, () => true);
    expect(store.get('a')).toEqual(record('ann', 1));
    expect(store.get('b')).toEqual(record('bob', 2));
    // Nothing dropped: the file is left exactly as it was.
    expect(readFileSync(file, 'utf8')).toBe(pretty);

    writeFileSync(
      file,
      JSON.stringify({
        sessions: {
          ...good,
          nul: null,
          noName: { createdAt: 1, credential: 'c' },
          badTime: { username: 'x', createdAt: '1', credential: 'c' },
          badCredential: { username: 'x', createdAt: 1, credential: 5 },
          expired: record('old', 0),
        },
      }),
    );
    const pruned = new SessionStore(dataDir, (r) => r.createdAt > 0);
    for (const sid of ['nul', 'noName', 'badTime', 'badCredential', 'expired']) {
      expect(pruned.get(sid), sid).toBeUndefined();
    }
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ sessions: good });
  });

  it('starts empty on a file without sessions, and throws on an unreadable one', () => {
    for (const content of ['{}', '{"sessions":null}']) {
      const dataDir = tempDir();
      writeFileSync(path.join(dataDir, SESSIONS_FILE), content);
      const store = new SessionStore(dataDir, () => true);
      expect(store.get('0'), content).toBeUndefined();
      expect(readFileSync(path.join(dataDir, SESSIONS_FILE), 'utf8'), content).toBe(content);
    }
    const dataDir = tempDir();
    mkdirSync(path.join(dataDir, SESSIONS_FILE));
    expect(() => new SessionStore(dataDir, () => true)).toThrow(/EISDIR/);
  });

  it('a new session drops records that are no longer valid, and evicts the oldest by creation time', () => {
    const dataDir = tempDir();
    let cutoff = 0;
    const store = new SessionStore(dataDir, (r) => r.createdAt >= cutoff);
    const stale = store.create('ann', 5, 'c');
    cutoff = 10;
    const fresh = store.create('bob', 10, 'c');
    expect(store.get(stale)).toBeUndefined();
    expect(Object.keys(JSON.parse(readFileSync(path.join(dataDir, SESSIONS_FILE), 'utf8')).sessions)).toEqual(
      [fresh],
    );

    // Created out of order: the one with the smallest createdAt goes first, not the first inserted.
    const ids: string[] = [];
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i++)
      ids.push(store.create('cat', i === 0 ? 1000 : 100 + i, 'c'));
    const next = store.create('cat', 2000, 'c');
    expect(store.get(ids[1]!)).toBeUndefined();
    expect(store.get(ids[0]!)).toEqual(record('cat', 1000));
    expect(store.get(next)).toEqual(record('cat', 2000));
    expect(store.get(fresh)).toEqual(record('bob', 10));
  });
});
