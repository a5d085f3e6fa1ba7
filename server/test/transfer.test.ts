import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runTransfer } from '../src/cli.ts';
import { createFileAdapter, isStoredName } from '../src/files/service.ts';
import { MASTER, makeCaller } from '../src/kernel/caller.ts';
import { ctxOf } from '../src/kernel/context.ts';
import type { WriteEvent } from '../src/kernel/events.ts';
import { importApp } from '../src/transfer/import.ts';
import { killChildren, spawnCli, waitExit } from './helpers/child.ts';
import {
  credentialHeaders,
  freshSchema,
  schemaURI,
  startService,
  TEST_DATABASE_URL,
  type TestService,
} from './helpers/service.ts';

/**
 * `npm run server -- export` / `import` (docs/transfer.md): an app seeded with every wire type,
 * users, nested roles, relations, CLPs, protectedFields, an index, config, a file and a session,
 * exported, imported into a new data dir and exported again; bad files refused naming the line.
 */

const dirs: string[] = [];
function tempDir(prefix = 'bds-transfer-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  await killChildren();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The store options of a running test service (its PostgreSQL schema in the PostgreSQL run). */
function storeOf(t: TestService): string[] {
  const dir = ['--data-dir', t.dataDir];
  if (t.schema && TEST_DATABASE_URL)
    return [...dir, '--database-url', schemaURI(TEST_DATABASE_URL, t.schema)];
  return dir;
}

/** A service on the SQLite store of `dir`, whatever the run (the PostgreSQL run included). */
function onSqlite(dir: string, options: Record<string, unknown> = {}): Promise<TestService> {
  return startService({ dataDir: dir, databaseURI: `sqlite:${path.join(dir, 'data.sqlite')}`, ...options });
}

/** runTransfer in-process, with what it printed. */
async function transfer(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
  try {
    const code = await runTransfer(args, {});
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

function configFile(adapter: 'fs' | 'database'): string {
  const file = path.join(tempDir('bds-transfer-cfg-'), 'bds.json');
  writeFileSync(file, JSON.stringify({ files: { adapter } }));
  return file;
}

/** An export's lines, the header's time left out. */
function linesOf(file: string): unknown[] {
  return readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => {
      const value = JSON.parse(line);
      if (value.type === 'header') delete value.exportedAt;
      return value;
    });
}

const SECRET_BYTES = Buffer.concat([
  Buffer.from('file bytes: '),
  Buffer.alloc(200_000, 7),
  Buffer.from([0, 255]),
]);

interface Seeded {
  userId: string;
  sessionToken: string;
  fileName: string;
  thingIds: string[];
}

async function seed(t: TestService): Promise<Seeded> {
  const ok = (res: { status: number; text: string }, status = 201) => {
    expect(res.status, res.text).toBe(status);
  };
  const signup = await t.request('POST', '/users', {
    body: { username: 'ada', password: 'correct horse', email: 'ada@example.com', nick: 'A' },
  });
  ok(signup);
  const userId = signup.json.objectId as string;
  ok(await t.request('POST', '/users', { body: { username: 'bob', password: 'battery staple' } }));
  const login = await t.request('POST', '/login', { body: { username: 'ada', password: 'correct horse' } });
  ok(login, 200);
  const sessionToken = login.json.sessionToken as string;

  const file = await fetch(`${t.url}/files/notes.bin`, {
    method: 'POST',
    headers: { ...credentialHeaders('master'), 'Content-Type': 'application/octet-stream' },
    body: SECRET_BYTES,
  });
  expect(file.status).toBe(201);
  const fileName = ((await file.json()) as { name: string }).name;

  ok(
    await t.request('POST', '/schemas/Thing', {
      as: 'master',
      body: {
        fields: { embedding: { type: 'Vector', dimension: 3 }, secret: { type: 'String' } },
        classLevelPermissions: {
          find: { '*': true },
          get: { '*': true },
          count: { '*': true },
          create: { '*': true },
          update: { requiresAuthentication: true },
          delete: {},
          addField: {},
          protectedFields: { '*': ['secret'] },
        },
        indexes: { by_secret: { secret: 1 } },
      },
    }),
    200,
  );
  const user = { __type: 'Pointer', className: '_User', objectId: userId };
  const thingIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const created = await t.request('POST', '/classes/Thing', {
      as: 'master',
      body: {
        name: `thing ${i}`,
        count: i * 1.5,
        done: i % 2 === 0,
        when: { __type: 'Date', iso: `2024-0${i + 1}-02T03:04:05.678Z` },
        owner: user,
        attachment: { __type: 'File', name: fileName },
        place: { __type: 'GeoPoint', latitude: 48.85 + i, longitude: 2.35 },
        area: {
          __type: 'Polygon',
          coordinates: [
            [0, 0],
            [0, 1],
            [1, i + 1],
          ],
        },
        raw: { __type: 'Bytes', base64: Buffer.from(`bytes ${i}`).toString('base64') },
        meta: {
          nested: { deep: [1, 'two', { three: 3 }] },
          at: { __type: 'Date', iso: '2020-01-01T00:00:00.000Z' },
        },
        tags: ['a', i, { k: null }],
        embedding: [0.1 * i, 0.2, 0.3],
        secret: `hidden ${i}`,
        nothing: null,
        ...(i === 2 ? { ACL: { [userId]: { read: true, write: true } } } : {}),
      },
    });
    ok(created);
    thingIds.push(created.json.objectId);
  }
  // A Relation between rows of one class.
  ok(
    await t.request('PUT', `/classes/Thing/${thingIds[0]}`, {
      as: 'master',
      body: {
        friends: {
          __op: 'AddRelation',
          objects: thingIds.slice(1).map((objectId) => ({ __type: 'Pointer', className: 'Thing', objectId })),
        },
      },
    }),
    200,
  );
  // Nested roles: editors holds ada; admins holds editors.
  const editors = await t.request('POST', '/roles', {
    as: 'master',
    body: { name: 'editors', ACL: { '*': { read: true } }, users: { __op: 'AddRelation', objects: [user] } },
  });
  ok(editors);
  ok(
    await t.request('POST', '/roles', {
      as: 'master',
      body: {
        name: 'admins',
        ACL: { '*': { read: true } },
        roles: {
          __op: 'AddRelation',
          objects: [{ __type: 'Pointer', className: '_Role', objectId: editors.json.objectId }],
        },
      },
    }),
  );
  ok(
    await t.request('POST', '/classes/Note', {
      as: 'master',
      body: { text: 'for admins', ACL: { 'role:admins': { read: true } } },
    }),
  );
  ok(
    await t.request('PUT', '/config', {
      as: 'master',
      body: {
        params: { greeting: 'hello', limits: { max: 3 }, internal: 'x' },
        masterKeyOnly: { internal: true },
      },
    }),
    200,
  );
  ok(
    await t.request('POST', '/classes/_Installation', {
      body: { installationId: 'inst-1', deviceType: 'ios', deviceToken: 'token-1', channels: ['news'] },
    }),
  );
  return { userId, sessionToken, fileName, thingIds };
}

/** What the REST API answers, as several callers; the service's port masked in file urls. */
async function reads(t: TestService, s: Seeded): Promise<unknown[]> {
  const asked: Array<[string, string, Parameters<TestService['request']>[2]]> = [
    ['GET', '/schemas', { as: 'master' }],
    ['GET', '/config', { as: 'master' }],
    ['GET', '/config', {}],
    ['GET', '/classes/Thing', { as: 'master', query: { order: 'objectId' } }],
    ['GET', '/classes/Thing', { query: { order: 'objectId' } }],
    ['GET', '/classes/Thing', { sessionToken: s.sessionToken, query: { order: 'objectId', count: 1 } }],
    [
      'GET',
      '/classes/Thing',
      {
        as: 'master',
        query: {
          where: {
            $relatedTo: {
              object: { __type: 'Pointer', className: 'Thing', objectId: s.thingIds[0] },
              key: 'friends',
            },
          },
          order: 'objectId',
        },
      },
    ],
    ['GET', `/classes/Thing/${s.thingIds[1]}`, { query: { include: 'owner' } }],
    ['GET', '/classes/_Role', { as: 'master', query: { order: 'name' } }],
    ['GET', '/classes/Note', { sessionToken: s.sessionToken, query: { order: 'objectId' } }],
    ['GET', '/classes/Note', {}],
    ['GET', '/users', { as: 'master', query: { order: 'username' } }],
    ['GET', '/users/me', { sessionToken: s.sessionToken }],
    ['GET', '/sessions', { as: 'master', query: { order: 'objectId' } }],
    ['GET', '/installations', { as: 'master', query: { order: 'objectId' } }],
  ];
  const answers: unknown[] = [];
  for (const [method, p, options] of asked) {
    const res = await t.request(method, p, options);
    answers.push({
      request: `${method} ${p} ${JSON.stringify(options)}`,
      status: res.status,
      body: res.json,
    });
  }
  const file = await fetch(`${t.url}/files/test-app/${s.fileName}`);
  answers.push({
    file: file.status,
    type: file.headers.get('content-type'),
    bytes: Buffer.from(await file.arrayBuffer()).toString('base64'),
  });
  return JSON.parse(JSON.stringify(answers).replace(/localhost:\d+/g, 'localhost:PORT'));
}

for (const adapter of ['fs', 'database'] as const) {
  describe(`export and import (${adapter} file adapter)`, () => {
    let src: TestService;
    let seeded: Seeded;
    let before: unknown[];
    let lines: Array<Record<string, any>>;
    /** The export of the app imported into SQLite (the same lines as `first`). */
    let sqliteExport: string;
    const config = configFile(adapter);
    const first = path.join(tempDir(), 'app.ndjson');
    const exportOf = async (store: string[], name: string) => {
      const file = path.join(tempDir(), name);
      const result = await transfer(['export', '--out', file, ...store, '--config', config, '--sessions']);
      expect(result.err).toBe('');
      expect(result.code).toBe(0);
      return file;
    };
    const importInto = async (file: string, store: string[]) => {
      const result = await transfer(['import', '--in', file, ...store, '--config', config]);
      expect(result.err).toBe('');
      expect(result.code).toBe(0);
      return result;
    };

    beforeAll(async () => {
      // The service's own store: SQLite, or PostgreSQL in the PostgreSQL run.
      src = await startService({ files: { adapter } });
      seeded = await seed(src);
      before = await reads(src, seeded);
    });
    afterAll(async () => {
      await src?.close();
    });

    /** Everything a restored app must answer as the original did. */
    async function checkServes(dst: TestService) {
      expect(await reads(dst, seeded)).toEqual(before);
      // The user logs in with the same password; the wrong one still fails.
      const login = await dst.request('POST', '/login', {
        body: { username: 'ada', password: 'correct horse' },
      });
      expect(login.status, login.text).toBe(200);
      expect(login.json.objectId).toBe(seeded.userId);
      const wrong = await dst.request('POST', '/login', { body: { username: 'ada', password: 'wrong' } });
      expect(wrong.json).toEqual({ code: 101, error: 'Invalid username/password.' });
      // Nested roles hold: ada reads the admins' note through editors.
      const note = await dst.request('GET', '/classes/Note', { sessionToken: login.json.sessionToken });
      expect(note.json.results.map((r: { text: string }) => r.text)).toEqual(['for admins']);
      // A vector search answers from the imported vectors.
      const near = await dst.request('POST', '/aggregate/Thing', {
        as: 'master',
        body: {
          pipeline: [{ $vectorSearch: { queryVector: [0.2, 0.2, 0.3], path: 'embedding', limit: 1 } }],
        },
      });
      expect(near.status, near.text).toBe(200);
      expect(near.json.results[0].objectId).toBe(seeded.thingIds[2]);
    }

    it('exports, imports into a new SQLite data dir and exports again the same file; the REST API answers the same', async () => {
      const exported = await transfer([
        'export',
        '--out',
        first,
        ...storeOf(src),
        '--config',
        config,
        '--sessions',
      ]);
      expect(exported.err).toBe('');
      expect(exported.code).toBe(0);
      lines = linesOf(first) as Array<Record<string, any>>;
      expect(lines[0]).toEqual({
        type: 'header',
        format: 'bds-export',
        version: 1,
        service: '0.1.0',
        sessions: true,
      });
      const end = lines.at(-1)!;
      expect(end).toMatchObject({ type: 'end', lines: lines.length, relations: 4, files: 1 });
      expect(exported.out).toBe(
        `[bds] exported ${end.classes} classes, ${end.rows} rows, 4 relation members and 1 files (${lines.length} lines) to ${first}`,
      );
      // Password hashes travel as internal columns, never as fields.
      const ada = lines.find((l) => l.type === 'row' && l.row.username === 'ada')!;
      expect(ada.internal._hashed_password).toMatch(/^scrypt\$/);
      expect(ada.row.password).toBeUndefined();
      // The file's bytes in chunks of 192 KiB.
      expect(lines.filter((l) => l.type === 'chunk').map((l) => l.seq)).toEqual([0, 1]);

      const target = tempDir();
      const imported = await importInto(first, ['--data-dir', target]);
      expect(imported.out).toBe(
        `[bds] imported ${end.classes} classes, ${end.rows} rows, 4 relation members and 1 files from ${first}`,
      );
      sqliteExport = await exportOf(['--data-dir', target], 'again.ndjson');
      expect(linesOf(sqliteExport)).toEqual(lines);

      const dst = await onSqlite(target, { files: { adapter } });
      try {
        await checkServes(dst);
      } finally {
        await dst.close();
      }
    });

    it.skipIf(!TEST_DATABASE_URL)('SQLite -> PostgreSQL -> SQLite: the same app', async () => {
      expect(sqliteExport).toBeDefined();
      const schema = await freshSchema(TEST_DATABASE_URL!);
      const dataDir = tempDir();
      const pgStore = ['--data-dir', dataDir, '--database-url', schema.uri];
      try {
        await importInto(sqliteExport, pgStore);
        // PostgreSQL may order objectIds by another collation: the same lines, maybe in another order.
        const fromPg = await exportOf(pgStore, 'from-pg.ndjson');
        const sorted = (l: unknown[]) => l.map((x) => JSON.stringify(x)).sort();
        expect(sorted(linesOf(fromPg))).toEqual(sorted(lines));
        const pg = await startService({ dataDir, databaseURI: schema.uri, files: { adapter } });
        try {
          await checkServes(pg);
        } finally {
          await pg.service.close();
        }
        const back = tempDir();
        await importInto(fromPg, ['--data-dir', back]);
        expect(linesOf(await exportOf(['--data-dir', back], 'back.ndjson'))).toEqual(lines);
      } finally {
        await schema.drop();
      }
    });

    it('an import into a running service passes the write pipeline: events of source import, caches follow', async () => {
      expect(lines).toBeDefined();
      const t = await onSqlite(tempDir(), { files: { adapter } });
      try {
        const events: WriteEvent[] = [];
        t.service.core.events.subscribe((e) => events.push(e));
        const adapterOf = createFileAdapter(t.service.options, t.service.data);
        const summary = await importApp(
          t.service.data,
          {
            list: () => adapterOf.list(),
            read: (file, start, end) => adapterOf.read(file, start, end),
            save: (name, type, source, limit, createdAt) =>
              adapterOf.save(name, type, source, limit, createdAt),
            delete: (name) => adapterOf.delete(name),
            validName: isStoredName,
          },
          first,
        );
        const end = lines.at(-1)!;
        expect(summary).toEqual({
          lines: lines.length,
          classes: end.classes,
          rows: end.rows,
          relations: 4,
          files: 1,
        });
        expect(new Set(events.map((e) => e.source))).toEqual(new Set(['import']));
        const count = (op: string, className?: string) =>
          events.filter((e) => e.op === op && (className === undefined || e.className === className)).length;
        // One create per row, one update per relation line (the owning row, updatedAt kept), the config,
        // and the schema changes: the classes made, the built-in ones updated.
        expect(count('create') - count('create', '_SCHEMA')).toBe(end.rows);
        expect(count('update', 'Thing')).toBe(1);
        expect(count('update', '_Role')).toBe(2);
        expect(count('update', '_GlobalConfig')).toBe(1);
        expect(count('create', '_SCHEMA')).toBe(2);
        expect(events.every((e) => e.caller.isMaster)).toBe(true);
        const restored = events.find((e) => e.op === 'create' && e.objectId === seeded.thingIds[0])!;
        expect(restored.after).toMatchObject({ objectId: seeded.thingIds[0], name: 'thing 0' });
        // The running service's caches follow: the new classes are known at once, roles resolve.
        await checkServes(t);
      } finally {
        await t.close();
      }
    });

    it('leaves sessions out without --sessions, and refuses a target that is not empty (exit 4)', async () => {
      const noSessions = path.join(tempDir(), 'no-sessions.ndjson');
      expect(
        (await transfer(['export', '--out', noSessions, ...storeOf(src), '--config', config])).code,
      ).toBe(0);
      const partial = linesOf(noSessions) as Array<Record<string, any>>;
      expect(partial[0]).toMatchObject({ sessions: false });
      expect(partial.some((l) => l.type === 'row' && l.className === '_Session')).toBe(false);
      expect(partial.some((l) => l.type === 'schema' && l.className === '_Session')).toBe(true);

      const refused = await transfer(['import', '--in', noSessions, ...storeOf(src), '--config', config]);
      expect(refused.code).toBe(4);
      expect(refused.err).toMatch(
        /^\[bds\] import failed: The target app is not empty \(rows in .*Thing.*; files; config parameters\): import only into an empty app \(a new data dir or database\)\.$/,
      );
    });
  });
}

describe('import: bad files are refused naming the line, and nothing is imported', () => {
  let good: string[];
  let src: TestService;

  beforeAll(async () => {
    src = await startService();
    await seed(src);
    const file = path.join(tempDir(), 'good.ndjson');
    expect((await transfer(['export', '--out', file, ...storeOf(src)])).code).toBe(0);
    good = readFileSync(file, 'utf8').split('\n');
    expect(good.at(-1)).toBe('');
  });
  afterAll(async () => {
    await src?.close();
  });

  /** Imports `text` into a new data dir; answers the outcome and what the target then holds. */
  async function importText(text: string) {
    const file = path.join(tempDir(), 'bad.ndjson');
    writeFileSync(file, text);
    const target = tempDir();
    const result = await transfer(['import', '--in', file, '--data-dir', target]);
    const t = await onSqlite(target);
    try {
      const schemas = await t.request('GET', '/schemas', { as: 'master' });
      const users = await t.request('GET', '/users', { as: 'master', query: { count: 1, limit: 0 } });
      const config = await t.request('GET', '/config', { as: 'master' });
      return {
        ...result,
        classes: schemas.json.results.map((s: { className: string }) => s.className),
        userFields: Object.keys(
          schemas.json.results.find((s: { className: string }) => s.className === '_User').fields,
        ),
        users: users.json.count,
        params: config.json.params,
      };
    } finally {
      await t.close();
    }
  }

  const empty = { users: 0, params: {} };
  const rowLine = () => good.findLastIndex((l) => l.includes('"type":"row"'));

  it('a malformed line', async () => {
    const lines = [...good];
    const at = rowLine();
    lines[at] = '{"type":"row","className":"Thing",';
    const result = await importText(lines.join('\n'));
    expect(result.code).toBe(3);
    expect(result.err).toMatch(
      new RegExp(`^\\[bds\\] import failed: line ${at + 1}: not valid JSON \\(.+\\)\\.$`),
    );
    expect(result).toMatchObject(empty);
    expect(result.classes).not.toContain('Thing');
  });

  it('a line with a __proto__ key', async () => {
    const lines = [...good];
    const at = lines.findIndex((l) => l.includes('"type":"row"') && l.includes('"className":"Thing"'));
    lines[at] = lines[at]!.replace('"row":{', '"row":{"__proto__":{"x":1},');
    const result = await importText(lines.join('\n'));
    expect(result.code).toBe(3);
    expect(result.err).toBe(`[bds] import failed: line ${at + 1}: the line holds a key named __proto__.`);
    expect(result).toMatchObject(empty);
  });

  it('an unknown format version', async () => {
    const lines = [...good];
    lines[0] = lines[0]!.replace('"version":1', '"version":2');
    const result = await importText(lines.join('\n'));
    expect(result.code).toBe(3);
    expect(result.err).toBe(
      '[bds] import failed: line 1: unknown format version 2; this service reads version 1.',
    );
    expect(result).toMatchObject(empty);
  });

  it('a file cut short, between lines or inside one', async () => {
    const at = rowLine();
    const between = await importText(`${good.slice(0, at).join('\n')}\n`);
    expect(between.code).toBe(3);
    expect(between.err).toBe(
      `[bds] import failed: line ${at}: the file ends here, without its end line: it is truncated (nothing was imported).`,
    );
    expect(between).toMatchObject(empty);
    expect(between.classes).not.toContain('Thing');

    const inside = await importText(`${good.slice(0, at).join('\n')}\n${good[at]!.slice(0, 20)}`);
    expect(inside.code).toBe(3);
    expect(inside.err).toMatch(new RegExp(`^\\[bds\\] import failed: line ${at + 1}: not valid JSON`));
    expect(inside).toMatchObject(empty);
  });

  it('a row whose value does not fit its schema, and lines out of order', async () => {
    const lines = [...good];
    const at = lines.findIndex((l) => l.includes('"type":"row"') && l.includes('"className":"Thing"'));
    const line = JSON.parse(lines[at]!);
    line.row.count = 'many';
    lines[at] = JSON.stringify(line);
    const result = await importText(lines.join('\n'));
    expect(result.code).toBe(3);
    expect(result.err).toBe(
      `[bds] import failed: line ${at + 1}: row "${line.row.objectId}" of Thing: schema mismatch for count; expected Number but got String`,
    );
    expect(result).toMatchObject(empty);

    const moved = [...good];
    const schemaAt = moved.findIndex((l) => l.includes('"type":"schema"'));
    const [schema] = moved.splice(schemaAt, 1);
    moved.splice(rowLine(), 0, schema!);
    const out = await importText(moved.join('\n'));
    expect(out.code).toBe(3);
    expect(out.err).toMatch(
      /^\[bds\] import failed: line \d+: a schema line cannot come here \(out of order\)\.$/,
    );
  });

  it('a row the store refuses (an objectId twice): the import stops naming the line and takes back what it wrote', async () => {
    const lines = [...good];
    const at = lines.findIndex((l) => l.includes('"type":"row"') && l.includes('"className":"Thing"'));
    lines.splice(at + 1, 0, lines[at]!);
    const endAt = lines.findIndex((l) => l.includes('"type":"end"'));
    const end = JSON.parse(lines[endAt]!);
    lines[endAt] = JSON.stringify({ ...end, lines: end.lines + 1, rows: end.rows + 1 });
    const result = await importText(lines.join('\n'));
    expect(result.code).toBe(3);
    expect(result.err).toBe(
      `[bds] import failed: line ${at + 2}: A duplicate value for a field with unique values was provided. The import stopped there; what it had written was taken back.`,
    );
    // Users, roles and the config were written before the failing line: all taken back, the
    // field the users added to _User included.
    expect(result).toMatchObject(empty);
    expect(result.classes).not.toContain('Thing');
    expect(result.classes).not.toContain('Note');
    expect(result.userFields).not.toContain('nick');
  });

  it('bad options exit 2; a missing file exits 3', async () => {
    const usage = await transfer(['import', '--out', 'x']);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/^\[bds\] import needs --in FILE/);
    const unknown = await transfer(['export', '--out', 'x', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(
      /^\[bds\] Unknown option '--bogus'\. usage: npm run server -- export --out FILE/,
    );
    const missing = path.join(tempDir(), 'missing.ndjson');
    const target = tempDir();
    const none = await transfer(['import', '--in', missing, '--data-dir', target]);
    expect(none.code).toBe(3);
    expect(none.err).toBe(
      `[bds] import failed: cannot read ${missing}: ENOENT: no such file or directory, access '${missing}'`,
    );
    // No store was made for an import that could not start.
    expect(readdirSync(target)).toEqual([]);
    // Nor for an export of a data dir that holds none.
    const nothing = await transfer(['export', '--out', path.join(target, 'x.ndjson'), '--data-dir', target]);
    expect(nothing.code).toBe(2);
    expect(nothing.err).toBe(
      `[bds] export failed: there is no store at ${path.join(target, 'data.sqlite')}.`,
    );
    expect(readdirSync(target)).toEqual([]);
  });
});

describe('the restore entry of the write pipeline', () => {
  it('is master only, keeps the dates, and takes neither fields outside the schema nor unknown internal columns', async () => {
    const t = await onSqlite(tempDir());
    try {
      const { writes } = t.service.data;
      const master = ctxOf(MASTER, 'import');
      const row = {
        objectId: 'kept01',
        createdAt: '2020-01-01T00:00:00.000Z',
        updatedAt: '2021-02-03T04:05:06.789Z',
        username: 'zoe',
      };
      await expect(writes.restore(ctxOf(makeCaller({}), 'rest'), '_User', row)).rejects.toMatchObject({
        code: 119,
        message: 'unauthorized: master key is required',
      });
      await expect(
        writes.restore(master, '_User', row, { _secret_column: 'x' } as Record<string, string>),
      ).rejects.toMatchObject({ code: 105, message: '_User has no internal column _secret_column.' });
      await expect(writes.restore(master, '_User', { ...row, nick: 'Z' })).rejects.toMatchObject({
        code: 111,
        message: '_User has no field nick in its schema.',
      });
      await expect(writes.restore(master, '_User', { ...row, updatedAt: 'yesterday' })).rejects.toMatchObject(
        {
          code: 111,
          message: 'updatedAt must be a date in ISO 8601 form, in UTC.',
        },
      );
      await writes.restore(master, '_User', row, { _hashed_password: null });
      const read = await t.request('GET', '/users/kept01', { as: 'master' });
      expect(read.json).toEqual({ ...row, ACL: undefined });
    } finally {
      await t.close();
    }
  });
});

describe('npm run server -- export / import (the real command)', () => {
  afterEach(async () => {
    await killChildren();
  });

  it('exports and imports through the CLI entry, with its exit codes', async () => {
    const dataDir = tempDir();
    const seededService = await onSqlite(dataDir);
    await seed(seededService);
    await seededService.service.close();
    const file = path.join(tempDir(), 'cli.ndjson');
    const exported = spawnCli({ BDS_DATA_DIR: dataDir }, ['export', '--out', file]);
    expect(await waitExit(exported)).toEqual({ code: 0, signal: null });
    expect(exported.stdout()).toContain(`relation members and 1 files`);
    const target = tempDir();
    const imported = spawnCli({}, ['import', '--in', file, '--data-dir', target]);
    expect(await waitExit(imported)).toEqual({ code: 0, signal: null });
    expect(imported.stdout()).toContain(`[bds] imported `);
    const again = spawnCli({}, ['import', '--in', file, '--data-dir', target]);
    expect(await waitExit(again)).toEqual({ code: 4, signal: null });
    expect(again.stderr()).toContain('The target app is not empty');
  });
});
