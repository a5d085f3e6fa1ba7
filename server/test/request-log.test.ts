import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../src/config/options.ts';
import { createService } from '../src/index.ts';
import { createLogger, type LogLevel, writeRequestLine } from '../src/kernel/log.ts';
import { KEYS } from './helpers/keys.ts';

/** The request log: one structured line per request, what it holds and hides, and its level. */

describe('structured request log', () => {
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  let service: Awaited<ReturnType<typeof createService>>;
  let url: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'bds-log-'));
    const sink = new Writable({
      write(chunk, _enc, done) {
        raw += chunk.toString();
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    service = await createService(
      { ...KEYS, dataDir, logLevel: 'info' },
      { log: createLogger('info', sink) },
    );
    url = (await service.listen(0, '127.0.0.1')).url;
  });
  afterAll(async () => {
    await service?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = (method: string, p: string, headers: Record<string, string> = {}, body?: unknown) =>
    fetch(`${url}${p}`, {
      method,
      headers: {
        'X-Backend-Application-Id': KEYS.appId,
        'X-Backend-REST-API-Key': KEYS.restAPIKey,
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('one line per request: method, path, status, code, duration, caller kind and user; no secret', async () => {
    const signUp = await call('POST', '/users', {}, { username: 'logged', password: 'hunter2-secret' });
    const { objectId, sessionToken } = (await signUp.json()) as { objectId: string; sessionToken: string };
    await call('GET', `/login?username=logged&password=hunter2-secret`);
    await call('GET', '/users/me', { 'X-Backend-Session-Token': sessionToken });
    await call('GET', '/classes/Nothing/abc', { 'X-Backend-Master-Key': KEYS.masterKey });
    service.core.log.info(
      { sessionToken, nested: { password: 'hunter2-secret', masterKey: KEYS.masterKey } },
      'probe',
    );
    service.core.log.flush();
    await new Promise((r) => setTimeout(r, 50));
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.method, l.path, l.status])).toEqual([
      ['POST', '/users', 201],
      ['GET', '/login', 200],
      ['GET', '/users/me', 200],
      ['GET', '/classes/Nothing/abc', 404],
    ]);
    expect(requests[2]).toMatchObject({ caller: 'user', user: objectId, level: 30 });
    expect(requests[3]).toMatchObject({ caller: 'master', code: 101 });
    for (const l of requests) expect(typeof l.ms).toBe('number');
    expect(lines.find((l) => l.msg === 'probe')).toMatchObject({
      sessionToken: '[FILTERED]',
      nested: { password: '[FILTERED]', masterKey: '[FILTERED]' },
    });
    expect(raw).not.toContain('hunter2-secret');
    expect(raw).not.toContain(sessionToken);
    expect(raw).not.toContain(KEYS.masterKey);
    expect(raw).not.toContain(KEYS.restAPIKey);
  });

  it('the request line is the line pino itself writes for the same record (except the time)', () => {
    const captured: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        captured.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const log = createLogger('info', sink);
    const record = {
      method: 'GET',
      path: '/classes/A"b\\c/\u2028x',
      status: 404,
      code: 101,
      ms: 0.42,
      caller: 'user',
      user: 'u"1',
    };
    writeRequestLine(log, record);
    log.info(record, 'request');
    writeRequestLine(log, {
      ...record,
      method: undefined,
      code: undefined,
      caller: undefined,
      user: undefined,
    });
    log.info(
      { ...record, method: undefined, code: undefined, caller: undefined, user: undefined },
      'request',
    );
    const [ours, pinos, oursShort, pinosShort] = captured.map((l) => {
      const { time, ...rest } = JSON.parse(l) as Record<string, unknown>;
      expect(typeof time).toBe('number');
      return rest;
    });
    expect(ours).toEqual(pinos);
    expect(Object.keys(ours!)).toEqual(Object.keys(pinos!));
    expect(oursShort).toEqual(pinosShort);
    const silent = createLogger('warn', sink);
    writeRequestLine(silent, record);
    expect(captured).toHaveLength(4);
  });

  it('the level is an option: at warn, requests are not logged', () => {
    expect(validateOptions({ ...KEYS, logLevel: 'warn' }).logLevel).toBe('warn');
    expect(() => validateOptions({ ...KEYS, logLevel: 'loud' })).toThrow(/Invalid option "logLevel"/);
  });
});

describe('the log level filters the request lines', () => {
  async function run(level: LogLevel) {
    const lines: Array<Record<string, unknown>> = [];
    const destination = { write: (line: string) => void lines.push(JSON.parse(line)) };
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-test-'));
    const service = await createService(
      { ...KEYS, dataDir, port: 0, host: '127.0.0.1', logLevel: level, rateLimit: [] },
      { log: createLogger(level, destination) },
    );
    try {
      const { url } = await service.listen(0, '127.0.0.1');
      const app = { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-REST-API-Key': KEYS.restAPIKey };
      const headers = { 'X-Backend-Application-Id': KEYS.appId, 'X-Backend-Master-Key': KEYS.masterKey };
      const created = await fetch(`${url}/classes/Note`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: 'hello', password: 'not-a-field-secret' }),
      });
      expect(created.status).toBe(201);
      const signup = await fetch(`${url}/users`, {
        method: 'POST',
        headers: { ...app, 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: 'logged', password: 'hunter2-secret' }),
      });
      const token = ((await signup.json()) as { sessionToken: string }).sessionToken;
      const where = encodeURIComponent(JSON.stringify({ title: 'hello' }));
      const found = await fetch(`${url}/classes/Note?where=${where}&limit=5`, {
        headers: { ...app, 'X-Backend-Session-Token': token },
      });
      expect(found.status).toBe(200);
      const login = await fetch(`${url}/login?username=logged&password=hunter2-secret`, {
        headers: app,
      });
      expect(login.status).toBe(200);
      const missing = await fetch(`${url}/classes/Note/nope`, { headers });
      expect(missing.status).toBe(404);
      return { lines, token };
    } finally {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  it("at 'warn' no request line is written", async () => {
    const { lines } = await run('warn');
    expect(lines.filter((l) => l.msg === 'request')).toEqual([]);
    for (const line of lines) expect(line.level).toBeGreaterThanOrEqual(40);
  });

  it("at 'info' one line per request: method, path (below the mount path) without the query, status, duration, caller; no secret", async () => {
    const { lines, token } = await run('info');
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.method, l.path, l.status, l.caller])).toEqual([
      ['POST', '/classes/Note', 201, 'master'],
      ['POST', '/users', 201, 'anonymous'],
      ['GET', '/classes/Note', 200, 'user'],
      ['GET', '/login', 200, 'anonymous'],
      ['GET', '/classes/Note/nope', 404, 'master'],
    ]);
    for (const line of requests) {
      expect(typeof line.ms).toBe('number');
      expect(line.ms as number).toBeGreaterThanOrEqual(0);
    }
    expect(requests[2]!.user).toEqual(expect.any(String));
    expect(requests[4]!.code).toBe(101);
    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    for (const secret of [
      KEYS.masterKey,
      KEYS.restAPIKey,
      token,
      'hunter2-secret',
      'not-a-field-secret',
      'where',
      'limit=5',
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});
