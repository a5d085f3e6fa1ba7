import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isIssuedFileName, isUploadName, UPLOAD_NAME } from '@bds/client/protocol';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileAdapter } from '../src/files/service.ts';
import type { TransferFiles } from '../src/transfer/format.ts';
import { importApp } from '../src/transfer/import.ts';
import { exportToFile } from '../src/transfer/open.ts';
import { credentialHeaders, startService, type TestService } from './helpers/service.ts';

/**
 * A File value names a file this service stored, by the name it issued (`<32 lowercase hex>_<upload
 * name>`): anything else is refused on write (122), is never given a url, and is listed by the
 * master-only report of foreign File values. Stored files are served safely: images of the
 * allowlist inline, everything else as an attachment, never sniffed, never a page that runs.
 */

const HEX = 'abcdef0123456789abcdef0123456789';
const refusal = (field: string, shown: string) =>
  `${field} must name a file stored by this service (upload it with POST /files/<name>); ${shown} is not one.`;

async function upload(t: TestService, name: string, content: string, type: string) {
  const res = await fetch(`${t.url}/files/${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { ...credentialHeaders('master'), 'Content-Type': type },
    body: Buffer.from(content),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const countOf = async (t: TestService, className: string) =>
  (await t.request('GET', `/classes/${className}`, { as: 'master', query: { count: 1, limit: 0 } })).json
    .count as number;

/** Writes a row straight to the store, below the write validation: data stored before the rule. */
async function seedLegacy(
  t: TestService,
  className: string,
  objectId: string,
  values: Record<string, unknown>,
) {
  const schema = t.service.core.schemas.get(className)!;
  await t.service.core.store.insert(schema, {
    objectId,
    createdAt: new Date().toISOString(),
    values: Object.fromEntries(
      Object.entries(values).map(([field, value]) => [field, { value, type: schema.fields[field]!.type }]),
    ),
    acl: null,
    relations: [],
  });
}

let t: TestService;
beforeAll(async () => {
  t = await startService({ serverURL: 'https://files.example.test/api' });
  const schema = await t.request('POST', '/schemas/Doc', {
    as: 'master',
    body: {
      fields: {
        attachment: { type: 'File' },
        pages: { type: 'Array' },
        meta: { type: 'Object' },
      },
    },
  });
  expect(schema.status, schema.text).toBe(200);
});
afterAll(() => t.close());

describe('write validation: a File value names a file this service issued', () => {
  const refused: Array<[string, string]> = [
    ['an http url', 'http://127.0.0.1:9/evil.html'],
    ['an https url', 'https://cdn.example.test/a.png'],
    ['a relative path', '../x'],
    ['a name without the random prefix', 'report.pdf'],
    ['an uppercase hex prefix', `${HEX.toUpperCase()}_report.pdf`],
    ['a prefix one digit short', `${HEX.slice(1)}_report.pdf`],
    ['a prefix and nothing after it', `${HEX}_`],
    ['a prefix and a path', `${HEX}_../../etc/passwd`],
    ['a prefix and a name starting with a dot', `${HEX}_.htaccess`],
  ];
  for (const [what, name] of refused) {
    it(`refuses ${what} with 122 naming the field, and writes nothing`, async () => {
      const before = await countOf(t, 'Doc');
      const res = await t.request('POST', '/classes/Doc', {
        as: 'master',
        body: { attachment: { __type: 'File', name } },
      });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 122, error: refusal('attachment', JSON.stringify(name)) });
      expect(await countOf(t, 'Doc')).toBe(before);
    });
  }

  it('refuses a name over the length limit, showing only its start', async () => {
    const name = `${HEX}_${'a'.repeat(129)}`;
    const res = await t.request('POST', '/classes/Doc', {
      as: 'master',
      body: { attachment: { __type: 'File', name } },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 122,
      error: refusal('attachment', `${JSON.stringify(name.slice(0, 100))}…`),
    });
  });

  it('refuses foreign names nested in Array and Object fields, in dotted keys and in Add', async () => {
    const created = await t.request('POST', '/classes/Doc', { as: 'master', body: { pages: [] } });
    expect(created.status, created.text).toBe(201);
    const id = created.json.objectId as string;
    const url = 'http://127.0.0.1:9/x.html';
    // [update body, field named, name refused, also refused as a create body]
    const cases: Array<[Record<string, unknown>, string, string, boolean]> = [
      [{ pages: [{ caption: 'one', image: { __type: 'File', name: url } }] }, 'pages', url, true],
      [{ meta: { cover: { deep: [{ __type: 'File', name: '../x' }] } } }, 'meta', '../x', true],
      [{ 'meta.cover': { __type: 'File', name: url } }, 'meta.cover', url, false],
      [
        { pages: { __op: 'Add', objects: [{ __type: 'File', name: 'plain.png' }] } },
        'pages',
        'plain.png',
        false,
      ],
    ];
    const before = await countOf(t, 'Doc');
    for (const [body, field, name, onCreate] of cases) {
      const error = { code: 122, error: refusal(field, JSON.stringify(name)) };
      const put = await t.request('PUT', `/classes/Doc/${id}`, { as: 'master', body });
      expect(put.status, JSON.stringify(body)).toBe(400);
      expect(put.json).toEqual(error);
      if (onCreate) {
        const post = await t.request('POST', '/classes/Doc', { as: 'master', body });
        expect(post.status, JSON.stringify(body)).toBe(400);
        expect(post.json).toEqual(error);
      }
    }
    expect(await countOf(t, 'Doc')).toBe(before);
    const row = await t.request('GET', `/classes/Doc/${id}`, { as: 'master' });
    expect(row.json.pages).toEqual([]);
    expect(row.json.meta).toBeUndefined();
  });

  it('refuses a batch member naming a foreign file; the other member is written', async () => {
    const up = await upload(t, 'good.txt', 'good', 'text/plain');
    const before = await countOf(t, 'Doc');
    const res = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        requests: [
          {
            method: 'POST',
            path: '/classes/Doc',
            body: { attachment: { __type: 'File', name: up.json.name } },
          },
          {
            method: 'POST',
            path: '/classes/Doc',
            body: { attachment: { __type: 'File', name: 'http://10.0.0.1/' } },
          },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.json[0].success.objectId).toMatch(/^\w{10}$/);
    expect(res.json[1]).toEqual({
      error: { code: 122, error: refusal('attachment', JSON.stringify('http://10.0.0.1/')) },
    });
    expect(await countOf(t, 'Doc')).toBe(before + 1);
  });

  it('keeps no url a caller sends: urls are built from the name on read, top-level and nested', async () => {
    const up = await upload(t, 'kept.png', 'png', 'image/png');
    const created = await t.request('POST', '/classes/Doc', {
      as: 'master',
      body: {
        attachment: { __type: 'File', name: up.json.name, url: 'http://attacker.test/a' },
        pages: [{ image: { __type: 'File', name: up.json.name, url: 'http://attacker.test/b' } }],
      },
    });
    expect(created.status, created.text).toBe(201);
    const row = await t.request('GET', `/classes/Doc/${created.json.objectId}`, { as: 'master' });
    expect(row.json.attachment).toEqual({
      __type: 'File',
      name: up.json.name,
      url: `https://files.example.test/api/files/test-app/${up.json.name}`,
    });
    expect(row.json.pages).toEqual([{ image: { __type: 'File', name: up.json.name } }]);
  });

  it('refuses a foreign name in an imported row, naming the line, and imports nothing', async () => {
    const source = await startService();
    const target = await startService();
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-file-names-'));
    const filesOf = (s: TestService): TransferFiles => {
      const adapter = createFileAdapter(s.service.options, s.service.data);
      return {
        list: () => adapter.list(),
        read: (file, start, end) => adapter.read(file, start, end),
        save: (name, type, body, limit, createdAt) => adapter.save(name, type, body, limit, createdAt),
        delete: (name) => adapter.delete(name),
        validName: isIssuedFileName,
      };
    };
    try {
      const up = await upload(source, 'in-export.txt', 'x', 'text/plain');
      const row = await source.request('POST', '/classes/Doc', {
        as: 'master',
        body: { attachment: { __type: 'File', name: up.json.name } },
      });
      expect(row.status, row.text).toBe(201);
      const file = path.join(dir, 'app.ndjson');
      await exportToFile(source.service.data, filesOf(source), file, { service: 'test', sessions: false });
      const lines = readFileSync(file, 'utf8').split('\n');
      const at = lines.findIndex((l) => l.includes('"type":"row"') && l.includes('"className":"Doc"'));
      lines[at] = lines[at]!.replace(up.json.name, 'http://169.254.169.254/latest');
      writeFileSync(file, lines.join('\n'));
      await expect(importApp(target.service.data, filesOf(target), file)).rejects.toThrow(
        `line ${at + 1}: row ${JSON.stringify(row.json.objectId)} of Doc: ${refusal('attachment', '"http://169.254.169.254/latest"')}`,
      );
      expect((await target.request('GET', '/schemas/Doc', { as: 'master' })).status).toBe(400);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await source.close();
      await target.close();
    }
  });
});

describe('serving a stored file', () => {
  const SAFETY = { nosniff: 'nosniff', csp: "default-src 'none'; sandbox" };
  const inline = [
    'image/png',
    'image/jpeg',
    'image/gif',
    'image/webp',
    'image/avif',
    'image/bmp',
    'image/x-icon',
    'image/vnd.microsoft.icon',
  ];
  const attachment: Array<[string, string, string]> = [
    ['my page.html', 'text/html', 'text/html'],
    ['pic.svg', 'image/svg+xml', 'image/svg+xml'],
    ['notes.txt', 'text/plain', 'text/plain'],
    ['paper.pdf', 'application/pdf', 'application/pdf'],
    ['blob.bin', 'application/octet-stream', 'application/octet-stream'],
    ['evil.js', 'text/javascript', 'application/octet-stream'],
    ['evil.mjs', 'application/javascript', 'application/octet-stream'],
    ['look.css', 'text/css', 'application/octet-stream'],
  ];

  it('serves the image types of the allowlist inline, never sniffed, in a sandbox', async () => {
    for (const type of inline) {
      const up = await upload(t, 'image.png', 'bytes', type);
      const res = await fetch(`${t.url}/files/test-app/${up.json.name}`);
      expect(res.status, type).toBe(200);
      expect(res.headers.get('content-type'), type).toBe(type);
      expect(res.headers.get('x-content-type-options')).toBe(SAFETY.nosniff);
      expect(res.headers.get('content-security-policy')).toBe(SAFETY.csp);
      expect(res.headers.get('content-disposition'), type).toBeNull();
    }
  });

  it('serves every other type as an attachment under its upload name; script and style types as bytes', async () => {
    for (const [name, type, served] of attachment) {
      const up = await upload(t, name, 'content', type);
      const res = await fetch(`${t.url}/files/test-app/${encodeURIComponent(up.json.name)}`);
      expect(res.status, type).toBe(200);
      expect(await res.text()).toBe('content');
      expect(res.headers.get('content-type'), type).toBe(served);
      expect(res.headers.get('content-disposition'), type).toBe(
        `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
      );
      expect(res.headers.get('x-content-type-options')).toBe(SAFETY.nosniff);
      expect(res.headers.get('content-security-policy')).toBe(SAFETY.csp);
    }
  });

  it('answers 404 for a foreign name on download, 153 on delete', async () => {
    for (const name of ['http://127.0.0.1:9/x', 'report.pdf', `${HEX.toUpperCase()}_x.txt`]) {
      const res = await fetch(`${t.url}/files/test-app/${encodeURIComponent(name)}`);
      expect(res.status, name).toBe(404);
      expect(await res.json()).toEqual({ code: 101, error: 'File not found.' });
      const del = await t.request('DELETE', `/files/${encodeURIComponent(name)}`, { as: 'master' });
      expect(del).toMatchObject({ status: 400, json: { code: 153, error: 'Could not delete file.' } });
    }
  });
});

describe('foreign File values stored before the rule', () => {
  const evil = 'http://127.0.0.1:9/evil.html';
  let good: string;
  beforeAll(async () => {
    const schema = await t.request('POST', '/schemas/Legacy', {
      as: 'master',
      body: { fields: { picture: { type: 'File' }, gallery: { type: 'Array' }, info: { type: 'Object' } } },
    });
    expect(schema.status, schema.text).toBe(200);
    good = (await upload(t, 'fine.png', 'png', 'image/png')).json.name;
    await seedLegacy(t, 'Legacy', 'legacyAAAA', { picture: { __type: 'File', name: evil } });
    await seedLegacy(t, 'Legacy', 'legacyBBBB', {
      picture: { __type: 'File', name: good },
      gallery: [{ caption: 'x', image: { __type: 'File', name: 'plain.png' } }],
      info: { cover: { deep: [{ __type: 'File', name: '../x' }] } },
    });
  });

  it('reads them back with their name and no url', async () => {
    const row = await t.request('GET', '/classes/Legacy/legacyAAAA', { as: 'master' });
    expect(row.json.picture).toEqual({ __type: 'File', name: evil });
    const fine = await t.request('GET', '/classes/Legacy/legacyBBBB', { as: 'master' });
    expect(fine.json.picture).toEqual({
      __type: 'File',
      name: good,
      url: `https://files.example.test/api/files/test-app/${good}`,
    });
  });

  it('GET /files/foreign lists them (top-level and nested) for the master key only', async () => {
    const report = await t.request('GET', '/files/foreign', { as: 'master' });
    expect(report.status, report.text).toBe(200);
    expect(report.json).toEqual({
      results: [
        { className: 'Legacy', objectId: 'legacyAAAA', field: 'picture', name: evil },
        { className: 'Legacy', objectId: 'legacyBBBB', field: 'gallery', name: 'plain.png' },
        { className: 'Legacy', objectId: 'legacyBBBB', field: 'info', name: '../x' },
      ],
    });
    for (const as of ['rest', 'js'] as const) {
      expect(await t.request('GET', '/files/foreign', { as })).toMatchObject({
        status: 403,
        json: { code: 119, error: 'unauthorized: master key is required' },
      });
    }
    const user = await t.request('POST', '/users', { body: { username: 'reporter', password: 'pw-123456' } });
    expect(await t.request('GET', '/files/foreign', { sessionToken: user.json.sessionToken })).toMatchObject({
      status: 403,
      json: { code: 119, error: 'unauthorized: master key is required' },
    });
  });
});

describe('property: the one rule decides writes and uploads', () => {
  it('any upload name round-trips: upload, an issued name, written on a row, served', async () => {
    const uploadName = fc.stringMatching(UPLOAD_NAME).filter((n) => n.length <= 128);
    await fc.assert(
      fc.asyncProperty(uploadName, async (name) => {
        expect(isUploadName(name)).toBe(true);
        const up = await upload(t, name, `bytes of ${name}`, 'text/plain');
        expect(up.status, name).toBe(201);
        expect(isIssuedFileName(up.json.name)).toBe(true);
        expect(up.json.name.slice(33)).toBe(name);
        const row = await t.request('POST', '/classes/Doc', {
          as: 'master',
          body: { attachment: { __type: 'File', name: up.json.name } },
        });
        expect(row.status, row.text).toBe(201);
        const served = await fetch(`${t.url}/files/test-app/${encodeURIComponent(up.json.name)}`);
        expect(served.status).toBe(200);
        expect(await served.text()).toBe(`bytes of ${name}`);
      }),
      { numRuns: 40 },
    );
  });

  it('any other string is refused on write with 122 and the exact text', async () => {
    const refusedName = fc
      .oneof(
        fc.string({ maxLength: 40 }),
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.string({ maxLength: 40 }).map((s) => `${HEX}_${s}`),
        fc.stringMatching(/^[0-9a-fA-F]{30,34}_[a-z]{1,5}$/),
        fc.webUrl(),
        fc.constantFrom('..', '/etc/passwd', 'file:///etc/passwd', `${HEX}_${'b'.repeat(129)}`),
      )
      .filter((name): boolean => name !== '' && !isIssuedFileName(name));
    await fc.assert(
      fc.asyncProperty(refusedName, async (name) => {
        const res = await t.request('POST', '/classes/Doc', {
          as: 'master',
          body: { attachment: { __type: 'File', name } },
        });
        expect(res.status, name).toBe(400);
        const shown = name.length > 100 ? `${JSON.stringify(name.slice(0, 100))}…` : JSON.stringify(name);
        expect(res.json).toEqual({ code: 122, error: refusal('attachment', shown) });
      }),
      { numRuns: 150 },
    );
  });
});
