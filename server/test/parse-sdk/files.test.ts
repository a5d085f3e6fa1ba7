import { Readable } from 'node:stream';
import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * Files with the stock `parse` SDK (v8), unchanged, against the real service: it uploads a base64
 * or byte-array file as a JSON body with content type `text/plain` and its credentials in the body
 * (`_ApplicationId`, `_JavaScriptKey`, `_SessionToken`, ...), a Buffer as a raw body with headers.
 * Then the exact answers of both forms over REST.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

const ISSUED = /^[0-9a-f]{32}_/;
const DIRECTORY_REFUSED =
  'File directories are not supported by this service: a file is stored under the name its upload answers.';
const NOT_DELETED = { code: 153, error: 'Could not delete file.' };
const CORS_ANSWER = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers':
    'X-Backend-Job-Status-Id, X-Parse-Job-Status-Id, X-Backend-Push-Status-Id, X-Parse-Push-Status-Id, Location, X-Request-Id',
};
/** A 1x1 PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

let t: TestService;
let sessionToken: string;

beforeAll(async () => {
  // Defaults: key-only callers may not upload, signed-in users may.
  t = await startService();
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  // One attempt: a failure must show up as a failure, not as a slow retry.
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
  const user = await Parse.User.signUp('ada', 'ada-password-1', {});
  sessionToken = user.getSessionToken()!;
});

afterAll(async () => {
  await t?.close();
});

/** The JSON form of an upload as the SDK sends it (a text/plain body), with `fields` over the defaults. */
function jsonUpload(name: string, fields: Record<string, unknown>, headers: Record<string, string> = {}) {
  return fetch(`${t.url}/files/${name}`, {
    method: 'POST',
    headers: { 'Content-Type': 'text/plain', ...headers },
    body: JSON.stringify({
      base64: Buffer.from('hello').toString('base64'),
      _ContentType: 'text/markdown',
      fileData: { metadata: {}, tags: {} },
      _ApplicationId: KEYS.appId,
      _JavaScriptKey: KEYS.javascriptKey,
      _ClientVersion: 'js8.6.2',
      _InstallationId: 'b1f0c4d2-5a6e-4f1b-9c3d-2e7a8b9c0d1e',
      _SessionToken: sessionToken,
      ...fields,
    }),
  });
}

async function answer(res: Response) {
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** What `GET /files/<appId>/metadata/<name>` answers (no keys, as the incumbent serves it). */
async function metadataOf(name: string): Promise<unknown> {
  const res = await fetch(`${t.url}/files/${KEYS.appId}/metadata/${name}`);
  expect(res.status).toBe(200);
  return res.json();
}

/** A stored file as the orphan report lists it. */
async function listed(name: string): Promise<Record<string, unknown> | undefined> {
  const res = await t.request('GET', '/files/orphans', { as: 'master' });
  return res.json.results.find((f: { name: string }) => f.name === name);
}

async function storedNames(): Promise<string[]> {
  const res = await t.request('GET', '/files/orphans', { as: 'master' });
  return res.json.results.map((f: { name: string }) => f.name);
}

describe('files with the stock Parse JS SDK', () => {
  it('saves a base64 file as a signed-in user: an issued name, a url that serves the bytes', async () => {
    const file = new Parse.File('hello.txt', { base64: Buffer.from('hello').toString('base64') });
    await file.save({ sessionToken });
    expect(file.name()).toMatch(/^[0-9a-f]{32}_hello\.txt$/);
    expect(file.url()).toBe(`${t.url.replace('127.0.0.1', 'localhost')}/files/${KEYS.appId}/${file.name()}`);
    const res = await fetch(file.url()!);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(await res.text()).toBe('hello');
  });

  it('saves a byte array and a data: URL; getData downloads the bytes back', async () => {
    const bytes = [61, 170, 236, 120];
    const array = new Parse.File('parse-server-logo', bytes);
    await array.save({ sessionToken });
    expect(array.name()).toMatch(/^[0-9a-f]{32}_parse-server-logo$/);
    (array as unknown as { _data: unknown })._data = null;
    expect(await array.getData()).toBe(Buffer.from(bytes).toString('base64'));

    const image = new Parse.File('dot.png', { base64: `data:image/png;base64,${PNG}` });
    await image.save({ sessionToken });
    const res = await fetch(image.url()!);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await res.arrayBuffer()).toString('base64')).toBe(PNG);
  });

  it('a saved file is a File value of an object and reads back with the same name and url', async () => {
    const file = new Parse.File('note.txt', { base64: Buffer.from('a note').toString('base64') });
    await file.save({ sessionToken });
    const doc = new Parse.Object('Doc', { attachment: file });
    await doc.save(null, { useMasterKey: true });
    const got = await new Parse.Query('Doc').get(doc.id!, { useMasterKey: true });
    const value = got.get('attachment') as ParseSDK.File;
    expect(value.name()).toBe(file.name());
    expect(value.url()).toBe(file.url());
  });

  it('a Buffer still uploads as a raw body with its credentials in headers', async () => {
    // The typings leave out the Buffer source the SDK takes on Node.
    const buffer = Buffer.from([1, 2, 3]) as unknown as number[];
    const file = new Parse.File('raw.bin', buffer, 'application/octet-stream');
    await file.save({ sessionToken });
    expect(file.name()).toMatch(/^[0-9a-f]{32}_raw\.bin$/);
    const res = await fetch(file.url()!);
    expect([...Buffer.from(await res.arrayBuffer())]).toEqual([1, 2, 3]);
  });

  it('without a session the upload answers the fileUpload refusal (130), not 119', async () => {
    const file = new Parse.File('anon.txt', { base64: 'eA==' });
    await expect(file.save()).rejects.toMatchObject({
      code: 130,
      message: 'File upload by public is disabled.',
    });
  });

  it('keeps the metadata and tags of new Parse.File, setMetadata, addMetadata and addTag (the JSON form)', async () => {
    const file = new Parse.File(
      'meta.txt',
      { base64: 'eA==' },
      'text/plain',
      { owner: 'ada' },
      { kind: 'x' },
    );
    file.addMetadata('purpose', 'avatar');
    file.setTags({ team: 'blue' });
    file.addTag('rank', '1');
    await file.save({ sessionToken });
    expect(file.name()).toMatch(/^[0-9a-f]{32}_meta\.txt$/);
    expect(await metadataOf(file.name())).toEqual({ metadata: { owner: 'ada', purpose: 'avatar' } });
    expect(await listed(file.name())).toMatchObject({
      metadata: { owner: 'ada', purpose: 'avatar' },
      tags: { kind: 'x', team: 'blue', rank: '1' },
    });
    expect(await (await fetch(file.url()!)).text()).toBe('x');
  });

  it('keeps metadata and tags of a Buffer (sent as JSON) and of a stream (sent raw, in the SDK headers)', async () => {
    const buffer = new Parse.File(
      'buf.bin',
      Buffer.from([1, 2]) as unknown as number[],
      'application/octet-stream',
      {
        from: 'buffer',
      },
    );
    await buffer.save({ sessionToken });
    expect(await metadataOf(buffer.name())).toEqual({ metadata: { from: 'buffer' } });

    const stream = new Parse.File(
      'stream.txt',
      Readable.from([Buffer.from('streamed')]) as unknown as number[],
      'text/plain',
      { from: 'stream' },
      { kind: 'raw' },
    );
    await stream.save({ sessionToken });
    expect(stream.name()).toMatch(/^[0-9a-f]{32}_stream\.txt$/);
    expect(await metadataOf(stream.name())).toEqual({ metadata: { from: 'stream' } });
    expect(await listed(stream.name())).toMatchObject({ tags: { kind: 'raw' } });
    expect(await (await fetch(stream.url()!)).text()).toBe('streamed');
  });

  it('a file saved without metadata answers {metadata: {}}; one that does not exist answers {}', async () => {
    const file = new Parse.File('bare.txt', { base64: 'eA==' });
    await file.save({ sessionToken });
    expect(await metadataOf(file.name())).toEqual({ metadata: {} });
    await file.destroy();
    expect(await metadataOf(file.name())).toEqual({});
  });

  it('metadata past its bounds or not strings is refused (130); nothing is stored', async () => {
    const before = await storedNames();
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    await expect(
      new Parse.File('many.txt', { base64: 'eA==' }, 'text/plain', many).save({ sessionToken }),
    ).rejects.toMatchObject({ code: 130, message: 'File metadata has 65 keys; a file keeps at most 64.' });
    const numbered = new Parse.File('n.txt', { base64: 'eA==' });
    numbered.addMetadata('size', 5);
    await expect(numbered.save({ sessionToken })).rejects.toMatchObject({
      code: 130,
      message: 'File metadata values must be strings; "size" is not.',
    });
    expect(await storedNames()).toEqual(before);
  });

  it('a directory is refused (130), with the master key too', async () => {
    const before = await storedNames();
    const file = new Parse.File('dir.txt', { base64: 'eA==' });
    file.setDirectory('docs');
    await expect(file.save({ sessionToken })).rejects.toMatchObject({
      code: 130,
      message: DIRECTORY_REFUSED,
    });
    const master = new Parse.File('dir.txt', { base64: 'eA==' });
    master.setDirectory('docs');
    await expect(master.save({ useMasterKey: true })).rejects.toMatchObject({
      code: 130,
      message: DIRECTORY_REFUSED,
    });
    expect(await storedNames()).toEqual(before);
  });

  it('destroy deletes the file; deleting a file that does not exist answers 153', async () => {
    const file = new Parse.File('doomed.txt', { base64: 'eA==' });
    await file.save({ sessionToken });
    const url = file.url()!;
    await file.destroy();
    expect((await fetch(url)).status).toBe(404);
    await expect(file.destroy()).rejects.toMatchObject({ code: 153, message: 'Could not delete file.' });
    const never = new Parse.File('parse-server-logo', [1, 2]);
    await expect(never.destroy()).rejects.toMatchObject({ code: 153, message: 'Could not delete file.' });
  });
});

describe('the JSON form of an upload over REST', () => {
  it('201 {name, url} with Location and the CORS headers; _ContentType is the served type', async () => {
    const res = await jsonUpload('readme.md', {});
    const body = await answer(res);
    expect(body.status).toBe(201);
    expect(Object.keys(body.json).sort()).toEqual(['name', 'url']);
    expect(body.json.name).toMatch(/^[0-9a-f]{32}_readme\.md$/);
    expect(res.headers.get('location')).toBe(body.json.url);
    for (const [header, value] of Object.entries(CORS_ANSWER)) expect(res.headers.get(header)).toBe(value);
    const served = await fetch(body.json.url);
    expect(served.headers.get('content-type')).toBe('text/markdown');
    expect(await served.text()).toBe('hello');
  });

  it("without _ContentType the file takes the request's Content-Type", async () => {
    const res = await answer(await jsonUpload('plain', { _ContentType: undefined }));
    expect(res.status).toBe(201);
    const served = await fetch(res.json.url);
    expect(served.headers.get('content-type')).toBe('text/plain');
  });

  it('the master key in the body needs no user; wrong or missing keys answer 403, 119', async () => {
    const master = await answer(
      await jsonUpload('m.txt', {
        _SessionToken: undefined,
        _JavaScriptKey: undefined,
        _MasterKey: KEYS.masterKey,
      }),
    );
    expect(master.status).toBe(201);
    const before = await storedNames();
    for (const fields of [
      { _ApplicationId: undefined },
      { _ApplicationId: 'other-app' },
      { _JavaScriptKey: 'wrong' },
      { _MasterKey: 'wrong-master-key' },
    ]) {
      const res = await answer(await jsonUpload('x.txt', fields));
      expect(res, JSON.stringify(fields)).toEqual({
        status: 403,
        json: { code: 119, error: 'unauthorized' },
      });
    }
    const notJson = await fetch(`${t.url}/files/x.txt`, { method: 'POST', body: 'hello' });
    expect(await answer(notJson)).toEqual({ status: 403, json: { code: 119, error: 'unauthorized' } });
    expect(await storedNames()).toEqual(before);
  });

  it('a malformed JSON form answers 107 naming the field; metadata breaking its rule answers 130; nothing is stored', async () => {
    const before = await storedNames();
    const badBase64 = {
      code: 107,
      error: "Invalid file upload: base64 must hold the file's bytes in base64.",
    };
    for (const [fields, status, json] of [
      [{ base64: undefined }, 400, badBase64],
      [{ base64: 5 }, 400, badBase64],
      [{ base64: 'ab$c' }, 400, badBase64],
      [{ fileData: 'x' }, 400, { code: 107, error: 'Invalid file upload: fileData must be a JSON object.' }],
      [
        { extra: 1 },
        400,
        {
          code: 107,
          error: 'Invalid file upload: unknown field extra (the JSON form has base64 and fileData).',
        },
      ],
      [
        { fileData: { metadata: { a: 1 } } },
        400,
        { code: 130, error: 'File metadata values must be strings; "a" is not.' },
      ],
      [
        { fileData: { tags: 'a=b' } },
        400,
        { code: 130, error: 'File tags must be a JSON object of strings.' },
      ],
      [{ fileData: { directory: 'docs' } }, 400, { code: 130, error: DIRECTORY_REFUSED }],
    ] as const) {
      const res = await answer(await jsonUpload('bad.txt', fields));
      expect(res, JSON.stringify(fields)).toEqual({ status, json });
    }
    // The name follows the one rule of upload names (122), as in the raw form.
    const badName = await answer(await jsonUpload('.hidden', {}));
    expect(badName).toEqual({
      status: 400,
      json: { code: 122, error: 'Filename contains invalid characters.' },
    });
    expect(await storedNames()).toEqual(before);
  });

  it('the raw form keeps the metadata and tags headers the SDK sends; a directory answers 130, a header not JSON 107', async () => {
    const kept = await t.request('POST', '/files/raw.txt', {
      as: 'master',
      headers: {
        'Content-Type': 'text/plain',
        'X-Parse-Upload-Mode': 'stream',
        'X-Parse-File-Metadata': '{"owner":"ada"}',
        'X-Parse-File-Tags': '{"kind":"x"}',
      },
      rawBody: 'x',
    });
    expect(kept.status).toBe(201);
    expect(await metadataOf(kept.json.name)).toEqual({ metadata: { owner: 'ada' } });
    expect(await listed(kept.json.name)).toMatchObject({ tags: { kind: 'x' } });
    const before = await storedNames();
    for (const [header, value, json] of [
      ['X-Parse-File-Directory', 'docs', { code: 130, error: DIRECTORY_REFUSED }],
      [
        'X-Parse-File-Metadata',
        'owner',
        { code: 107, error: 'Invalid JSON in X-Parse-File-Metadata header.' },
      ],
      ['X-Parse-File-Tags', '[1]', { code: 107, error: 'Invalid JSON in X-Parse-File-Tags header.' }],
    ] as const) {
      const res = await t.request('POST', '/files/raw.txt', {
        as: 'master',
        headers: { 'Content-Type': 'text/plain', [header]: value },
        rawBody: 'x',
      });
      expect([res.status, res.json], header).toEqual([400, json]);
    }
    expect(await storedNames()).toEqual(before);
  });

  it('a POST with _method DELETE deletes (master key in the body); a missing or foreign name answers 153', async () => {
    const up = await answer(await jsonUpload('gone.txt', {}));
    const remove = () =>
      fetch(`${t.url}/files/${up.json.name}`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify({ _method: 'DELETE', _ApplicationId: KEYS.appId, _MasterKey: KEYS.masterKey }),
      });
    expect(await answer(await remove())).toEqual({ status: 200, json: {} });
    expect(await answer(await remove())).toEqual({ status: 400, json: NOT_DELETED });
    for (const name of ['never.txt', `${'0'.repeat(32)}_never.txt`, 'http%3A%2F%2Fexample.com%2Fx']) {
      const res = await t.request('DELETE', `/files/${name}`, { as: 'master' });
      expect([res.status, res.json], name).toEqual([400, NOT_DELETED]);
    }
  });
});

describe('the size limit of the JSON form: the decoded bytes', () => {
  const LIMIT = 3000;
  let small: TestService;
  beforeAll(async () => {
    small = await startService({ maxUploadSize: LIMIT, fileUpload: { enableForPublic: true } });
  });
  afterAll(async () => {
    await small?.close();
  });

  const upload = (bytes: number, pad = 0) =>
    fetch(`${small.url}/files/big.bin`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: JSON.stringify({
        base64: Buffer.alloc(bytes, 7).toString('base64'),
        _ApplicationId: KEYS.appId,
        _JavaScriptKey: KEYS.javascriptKey,
        ...(pad ? { pad: 'x'.repeat(pad) } : {}),
      }),
    });

  it('a file of the limit uploads (its base64 is larger than the limit); one byte more answers 413, 130', async () => {
    const atLimit = await answer(await upload(LIMIT));
    expect(atLimit.status).toBe(201);
    expect(atLimit.json.name).toMatch(ISSUED);
    const over = await upload(LIMIT + 1);
    expect(over.headers.get('access-control-allow-origin')).toBe('*');
    expect(await answer(over)).toEqual({
      status: 413,
      json: { code: 130, error: `The file is larger than the maximum upload size of ${LIMIT} bytes.` },
    });
  });

  it('a body past what the JSON form of a file of the limit needs answers 413, 130 without being read', async () => {
    const res = await answer(await upload(10, 200_000));
    expect(res).toEqual({
      status: 413,
      json: { code: 130, error: `The file is larger than the maximum upload size of ${LIMIT} bytes.` },
    });
    const orphans = await small.request('GET', '/files/orphans', { as: 'master' });
    expect(orphans.json.results).toHaveLength(1);
  });
});
