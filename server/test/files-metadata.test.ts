import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runTransfer } from '../src/cli.ts';
import {
  credentialHeaders,
  freshSchema,
  KEYS,
  ON_POSTGRES,
  onTestDatabase,
  schemaURI,
  startService,
  TEST_DATABASE_URL,
  type TestService,
} from './helpers/service.ts';

/**
 * A file's metadata and tags (what the stock Parse SDKs send with an upload: `fileData` in the JSON
 * form, `X-Parse-File-Metadata` and `X-Parse-File-Tags` in the raw one) are kept with the file in
 * both file adapters, answered by `GET /files/<appId>/metadata/<name>` as the incumbent answers it,
 * listed by the orphan report, removed with the file, carried by export and import, and bounded.
 * A directory is refused.
 */

const DIRECTORY_REFUSED =
  'File directories are not supported by this service: a file is stored under the name its upload answers.';
const ISSUED = /^[0-9a-f]{32}_/;

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bds-file-data-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function answer(res: Response) {
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** The raw form, as the SDK sends a stream: the bytes as the body, what describes them in headers. */
function rawUpload(t: TestService, name: string, headers: Record<string, string> = {}, bytes = 'hello') {
  return fetch(`${t.url}/files/${name}`, {
    method: 'POST',
    headers: { ...credentialHeaders('master'), 'Content-Type': 'text/plain', ...headers },
    body: bytes,
  });
}

/** The JSON form, as the SDK sends a base64 file (`text/plain`, credentials in the body). */
function jsonUpload(t: TestService, name: string, fileData: unknown) {
  return fetch(`${t.url}/files/${name}`, {
    method: 'POST',
    headers: { 'Content-Type': 'text/plain' },
    body: JSON.stringify({
      base64: Buffer.from('hello').toString('base64'),
      _ContentType: 'text/plain',
      fileData,
      _ApplicationId: KEYS.appId,
      _MasterKey: KEYS.masterKey,
    }),
  });
}

const metadataOf = async (t: TestService, name: string, appId = KEYS.appId) =>
  answer(await fetch(`${t.url}/files/${appId}/metadata/${name}`));

async function orphans(t: TestService): Promise<Array<Record<string, unknown>>> {
  return (await t.request('GET', '/files/orphans', { as: 'master' })).json.results;
}

for (const adapter of ['fs', 'database'] as const) {
  describe(`file metadata and tags (${adapter} adapter)`, () => {
    let t: TestService;
    beforeAll(async () => {
      t = await startService({ files: { adapter } });
    });
    afterAll(() => t?.close());

    it('the JSON form keeps fileData.metadata and .tags; GET /files/<appId>/metadata/<name> answers the metadata without keys', async () => {
      const up = await answer(
        await jsonUpload(t, 'notes.txt', {
          metadata: { owner: 'ada', purpose: 'avatar' },
          tags: { team: 'blue' },
        }),
      );
      expect(up.status).toBe(201);
      expect(Object.keys(up.json).sort()).toEqual(['name', 'url']);
      const res = await fetch(`${t.url}/files/${KEYS.appId}/metadata/${up.json.name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(await res.json()).toEqual({ metadata: { owner: 'ada', purpose: 'avatar' } });
      // HEAD as well (Express answers it on the incumbent's GET route): the headers, no body.
      const head = await fetch(`${t.url}/files/${KEYS.appId}/metadata/${up.json.name}`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(res.headers.get('content-length'));
      expect(await head.text()).toBe('');
      // The bytes are served as before.
      expect(await (await fetch(up.json.url)).text()).toBe('hello');
    });

    it('the raw form keeps the X-Parse-File-Metadata and X-Parse-File-Tags headers', async () => {
      const up = await answer(
        await rawUpload(t, 'raw.txt', {
          'X-Parse-Upload-Mode': 'stream',
          'X-Parse-File-Metadata': '{"owner":"ada"}',
          'X-Parse-File-Tags': '{"kind":"x","empty":""}',
        }),
      );
      expect(up.status).toBe(201);
      expect(await metadataOf(t, up.json.name)).toEqual({
        status: 200,
        json: { metadata: { owner: 'ada' } },
      });
      const listed = (await orphans(t)).find((f) => f.name === up.json.name);
      expect(listed).toMatchObject({ metadata: { owner: 'ada' }, tags: { kind: 'x', empty: '' } });
    });

    it('a file without metadata answers {metadata: {}}; a missing file, another app or a name never issued answer {}', async () => {
      const plain = await answer(await rawUpload(t, 'plain.txt'));
      expect(await metadataOf(t, plain.json.name)).toEqual({ status: 200, json: { metadata: {} } });
      const empty = await answer(await jsonUpload(t, 'empty.txt', { metadata: {}, tags: {} }));
      expect(await metadataOf(t, empty.json.name)).toEqual({ status: 200, json: { metadata: {} } });
      for (const [name, appId] of [
        [`${'0'.repeat(32)}_never.txt`, KEYS.appId],
        ['never.txt', KEYS.appId],
        [plain.json.name, 'other-app'],
        [`..%2Fmeta%2F${plain.json.name}.json`, KEYS.appId],
        ['http%3A%2F%2Fexample.com%2Fx', KEYS.appId],
      ]) {
        expect(await metadataOf(t, name!, appId), name).toEqual({ status: 200, json: {} });
      }
    });

    it('the orphan report lists metadata and tags; deleting the file removes them', async () => {
      const up = await answer(await jsonUpload(t, 'doomed.txt', { metadata: { a: 'b' }, tags: { c: 'd' } }));
      const listed = (await orphans(t)).find((f) => f.name === up.json.name);
      expect(listed).toEqual({
        name: up.json.name,
        contentType: 'text/plain',
        size: 5,
        etag: expect.stringMatching(/^"[\w-]{43}"$/),
        createdAt: expect.any(String),
        metadata: { a: 'b' },
        tags: { c: 'd' },
        url: up.json.url,
      });
      expect((await t.request('DELETE', `/files/${up.json.name}`, { as: 'master' })).status).toBe(200);
      expect(await metadataOf(t, up.json.name)).toEqual({ status: 200, json: {} });
      expect((await orphans(t)).map((f) => f.name)).not.toContain(up.json.name);
    });

    it('refuses metadata and tags past their bounds or not strings (400, 130), storing nothing', async () => {
      const before = (await orphans(t)).map((f) => f.name);
      const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
      const cases: Array<[unknown, string]> = [
        [{ metadata: many }, 'File metadata has 65 keys; a file keeps at most 64.'],
        [{ tags: many }, 'File tags has 65 keys; a file keeps at most 64.'],
        [{ metadata: { size: 5 } }, 'File metadata values must be strings; "size" is not.'],
        [{ tags: { nested: { a: 'b' } } }, 'File tags values must be strings; "nested" is not.'],
        [
          { metadata: { long: 'é'.repeat(513) } },
          'File metadata values must be at most 1024 bytes; "long" has 1026.',
        ],
        [{ metadata: { ['k'.repeat(129)]: 'v' } }, 'File metadata keys must be 1 to 128 bytes long.'],
        [{ tags: { '': 'v' } }, 'File tags keys must be 1 to 128 bytes long.'],
        [{ metadata: 'owner=ada' }, 'File metadata must be a JSON object of strings.'],
        [{ tags: ['a'] }, 'File tags must be a JSON object of strings.'],
      ];
      for (const [fileData, error] of cases) {
        expect(await answer(await jsonUpload(t, 'x.txt', fileData)), error).toEqual({
          status: 400,
          json: { code: 130, error },
        });
      }
      // The same rule for the headers of the raw form.
      expect(
        await answer(await rawUpload(t, 'x.txt', { 'X-Parse-File-Metadata': JSON.stringify({ n: 1 }) })),
      ).toEqual({
        status: 400,
        json: { code: 130, error: 'File metadata values must be strings; "n" is not.' },
      });
      expect(await answer(await rawUpload(t, 'x.txt', { 'X-Parse-File-Tags': '{"__proto__":"x"}' }))).toEqual(
        { status: 400, json: { code: 130, error: 'File tags may not hold a key named __proto__.' } },
      );
      // At the bounds: 64 keys of 128 bytes, values of 1024 bytes.
      const full = Object.fromEntries(
        Array.from({ length: 64 }, (_, i) => [`${i}`.padStart(128, 'k'), 'v'.repeat(1024)]),
      );
      const fits = await answer(await jsonUpload(t, 'full.txt', { metadata: full, tags: full }));
      expect(fits.status).toBe(201);
      expect(await metadataOf(t, fits.json.name)).toEqual({ status: 200, json: { metadata: full } });
      expect((await orphans(t)).map((f) => f.name).sort()).toEqual([...before, fits.json.name].sort());
    });

    it('a header that is not a JSON object answers the incumbent 107; an unknown fileData field 107', async () => {
      const before = (await orphans(t)).length;
      for (const [header, value] of [
        ['X-Parse-File-Metadata', 'owner=ada'],
        ['X-Parse-File-Metadata', '["a"]'],
        ['X-Parse-File-Tags', 'null'],
      ]) {
        expect(await answer(await rawUpload(t, 'x.txt', { [header!]: value! })), value).toEqual({
          status: 400,
          json: { code: 107, error: `Invalid JSON in ${header} header.` },
        });
      }
      expect(await answer(await jsonUpload(t, 'x.txt', { metadata: {}, folder: 'a' }))).toEqual({
        status: 400,
        json: {
          code: 107,
          error:
            'Invalid file upload: unknown field fileData.folder (fileData has metadata, tags and directory).',
        },
      });
      expect((await orphans(t)).length).toBe(before);
    });

    it('a directory is refused (130) in either form, with the master key too', async () => {
      const before = (await orphans(t)).length;
      expect(await answer(await rawUpload(t, 'x.txt', { 'X-Parse-File-Directory': 'docs' }))).toEqual({
        status: 400,
        json: { code: 130, error: DIRECTORY_REFUSED },
      });
      expect(
        await answer(await jsonUpload(t, 'x.txt', { metadata: {}, tags: {}, directory: 'docs' })),
      ).toEqual({
        status: 400,
        json: { code: 130, error: DIRECTORY_REFUSED },
      });
      expect((await orphans(t)).length).toBe(before);
    });
  });
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

function storeOf(t: TestService): string[] {
  const dir = ['--data-dir', t.dataDir];
  if (t.schema && TEST_DATABASE_URL)
    return [...dir, '--database-url', schemaURI(TEST_DATABASE_URL, t.schema)];
  return dir;
}

for (const adapter of ['fs', 'database'] as const) {
  describe(`export and import carry metadata and tags (${adapter} adapter)`, () => {
    let src: TestService;
    let config: string;
    let labelled: string;
    let plain: string;
    beforeAll(async () => {
      src = await startService({ files: { adapter } });
      config = path.join(tempDir(), 'bds.json');
      writeFileSync(config, JSON.stringify({ files: { adapter } }));
      labelled = (
        await answer(await jsonUpload(src, 'a.txt', { metadata: { owner: 'ada' }, tags: { kind: 'x' } }))
      ).json.name;
      plain = (await answer(await rawUpload(src, 'b.txt'))).json.name;
    });
    afterAll(() => src?.close());

    it('the file line holds metadata and tags when set; an import restores them', async () => {
      const file = path.join(tempDir(), 'app.ndjson');
      expect(await transfer(['export', '--out', file, ...storeOf(src), '--config', config])).toMatchObject({
        code: 0,
        err: '',
      });
      const lines = readFileSync(file, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      const fileLine = (name: string) => lines.find((l) => l.type === 'file' && l.name === name);
      expect(fileLine(labelled)).toMatchObject({ metadata: { owner: 'ada' }, tags: { kind: 'x' } });
      expect(Object.keys(fileLine(plain)).sort()).toEqual(
        ['chunks', 'contentType', 'createdAt', 'etag', 'name', 'size', 'type'].sort(),
      );

      const target = tempDir();
      const sqlite = ['--data-dir', target];
      expect(await transfer(['import', '--in', file, ...sqlite, '--config', config])).toMatchObject({
        code: 0,
        err: '',
      });
      const dst = await startService({
        dataDir: target,
        databaseURI: `sqlite:${path.join(target, 'data.sqlite')}`,
        files: { adapter },
      });
      try {
        expect(await metadataOf(dst, labelled)).toEqual({
          status: 200,
          json: { metadata: { owner: 'ada' } },
        });
        expect(await metadataOf(dst, plain)).toEqual({ status: 200, json: { metadata: {} } });
        const byName = Object.fromEntries((await orphans(dst)).map((f) => [f.name, f]));
        expect(byName[labelled]).toMatchObject({ metadata: { owner: 'ada' }, tags: { kind: 'x' } });
        expect(byName[plain]).toMatchObject({ metadata: {}, tags: {} });
      } finally {
        await dst.close();
      }
    });

    it('an import refuses a file line whose metadata breaks the rule, naming the line (exit 3)', async () => {
      const file = path.join(tempDir(), 'app.ndjson');
      expect((await transfer(['export', '--out', file, ...storeOf(src), '--config', config])).code).toBe(0);
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const at = lines.findIndex((l) => l.includes('"type":"file"') && l.includes(labelled));
      lines[at] = lines[at]!.replace('"owner":"ada"', '"owner":7');
      writeFileSync(file, `${lines.join('\n')}\n`);
      const result = await transfer(['import', '--in', file, '--data-dir', tempDir(), '--config', config]);
      expect(result.code).toBe(3);
      expect(result.err).toBe(
        `[bds] import failed: line ${at + 1}: File metadata values must be strings; "owner" is not.`,
      );
    });
  });
}

describe('a file table of the earlier layout (no metadata or tags columns) is brought up to date at start', () => {
  it('the stored file answers {metadata: {}} and new uploads keep their metadata', async () => {
    const dataDir = tempDir();
    const db = ON_POSTGRES ? await freshSchema(TEST_DATABASE_URL!) : undefined;
    const databaseURI = db?.uri ?? `sqlite:${path.join(dataDir, 'data.sqlite')}`;
    const options = { dataDir, databaseURI, files: { adapter: 'database' } };
    try {
      const first = await startService(options);
      const old = (await answer(await rawUpload(first, 'old.txt'))).json.name as string;
      expect(old).toMatch(ISSUED);
      await first.close();

      // The layout before metadata and tags.
      const drop =
        'ALTER TABLE "_FileBlob" DROP COLUMN "metadata"; ALTER TABLE "_FileBlob" DROP COLUMN "tags";';
      if (db) {
        await onTestDatabase(TEST_DATABASE_URL!, `SET search_path TO "${db.name}"; ${drop}`);
      } else {
        const sqlite = new Database(path.join(dataDir, 'data.sqlite'));
        sqlite.exec(drop);
        sqlite.close();
      }

      const again = await startService(options);
      try {
        expect(await metadataOf(again, old)).toEqual({ status: 200, json: { metadata: {} } });
        expect(await (await fetch(`${again.url}/files/${KEYS.appId}/${old}`)).text()).toBe('hello');
        const up = await answer(
          await rawUpload(again, 'new.txt', {
            'X-Parse-File-Metadata': '{"owner":"ada"}',
            'X-Parse-File-Tags': '{"k":"v"}',
          }),
        );
        expect(up.status).toBe(201);
        expect(await metadataOf(again, up.json.name)).toEqual({
          status: 200,
          json: { metadata: { owner: 'ada' } },
        });
        const listed = (await orphans(again)).find((f) => f.name === up.json.name);
        expect(listed).toMatchObject({ tags: { k: 'v' } });
      } finally {
        await again.close();
      }
      // A start on the current layout changes nothing.
      const third = await startService(options);
      expect(await metadataOf(third, old)).toEqual({ status: 200, json: { metadata: {} } });
      await third.close();
    } finally {
      await db?.drop();
    }
  });
});
