import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialHeaders, startService, type TestService } from './helpers/service.ts';

const body = (text: string) => Buffer.from(text);

async function upload(
  t: TestService,
  name: string,
  content: string | Buffer,
  headers: Record<string, string> = { ...credentialHeaders('master'), 'Content-Type': 'text/plain' },
) {
  const res = await fetch(`${t.url}/files/${encodeURIComponent(name)}`, {
    method: 'POST',
    headers,
    body: typeof content === 'string' ? body(content) : content,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

for (const adapter of ['fs', 'database'] as const) {
  describe(`files (${adapter} adapter)`, () => {
    let t: TestService;
    let userToken: string;
    let anonToken: string;
    beforeAll(async () => {
      t = await startService({
        files: { adapter },
        maxUploadSize: 1000,
        serverURL: 'https://files.example.test/api',
      });
      const user = await t.request('POST', '/users', {
        body: { username: 'uploader', password: 'pw-123456' },
      });
      userToken = user.json.sessionToken;
      const anon = await t.request('POST', '/users', {
        body: { authData: { anonymous: { id: randomUUID() } } },
      });
      anonToken = anon.json.sessionToken;
    });
    afterAll(() => t.close());

    it('uploads with the master key: 201, a unique name, the url and Location', async () => {
      const res = await upload(t, 'hello.txt', 'hello world');
      expect(res.status).toBe(201);
      expect(res.json.name).toMatch(/^[0-9a-f]{32}_hello\.txt$/);
      expect(res.json.url).toBe(`https://files.example.test/api/files/test-app/${res.json.name}`);
      expect(res.headers.get('location')).toBe(res.json.url);
      const again = await upload(t, 'hello.txt', 'hello again');
      expect(again.json.name).not.toBe(res.json.name);
    });

    it('refuses callers the fileUpload options exclude, with the exact 130 texts, storing nothing', async () => {
      const before = await t.request('GET', '/files/orphans', { as: 'master' });
      const rest = { ...credentialHeaders('rest'), 'Content-Type': 'text/plain' };
      const pub = await upload(t, 'a.txt', 'x', rest);
      expect(pub).toMatchObject({
        status: 400,
        json: { code: 130, error: 'File upload by public is disabled.' },
      });
      const anon = await upload(t, 'a.txt', 'x', { ...rest, 'X-Backend-Session-Token': anonToken });
      expect(anon).toMatchObject({
        status: 400,
        json: { code: 130, error: 'File upload by anonymous user is disabled.' },
      });
      const user = await upload(t, 'a.txt', 'x', { ...rest, 'X-Backend-Session-Token': userToken });
      expect(user.status).toBe(201);
      const after = await t.request('GET', '/files/orphans', { as: 'master' });
      expect(after.json.results.length).toBe(before.json.results.length + 1);
    });

    it('checks file names (122) and the size limit (413, 130), keeping nothing', async () => {
      const before = (await t.request('GET', '/files/orphans', { as: 'master' })).json.results.length;
      expect(await upload(t, '.hidden', 'x')).toMatchObject({
        status: 400,
        json: { code: 122, error: 'Filename contains invalid characters.' },
      });
      expect(await upload(t, 'a'.repeat(129), 'x')).toMatchObject({
        status: 400,
        json: { code: 122, error: 'Filename too long.' },
      });
      const big = await upload(t, 'big.bin', Buffer.alloc(1001));
      expect(big).toMatchObject({
        status: 413,
        json: { code: 130, error: 'The file is larger than the maximum upload size of 1000 bytes.' },
      });
      // Without a declared length (chunked), the limit is enforced while the bytes stream.
      const chunked = await fetch(`${t.url}/files/big.bin`, {
        method: 'POST',
        headers: { ...credentialHeaders('master'), 'Content-Type': 'application/octet-stream' },
        body: new ReadableStream({
          start(c) {
            for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(400));
            c.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status).toBe(413);
      expect(await chunked.json()).toEqual({
        code: 130,
        error: 'The file is larger than the maximum upload size of 1000 bytes.',
      });
      expect((await t.request('GET', '/files/orphans', { as: 'master' })).json.results.length).toBe(before);
    });

    it('serves the bytes with type, length, ETag, caching, nosniff, ranges and 304', async () => {
      const up = await upload(t, 'data.txt', '0123456789');
      const url = `${t.url}/files/test-app/${up.json.name}`;
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('0123456789');
      expect(res.headers.get('content-type')).toBe('text/plain');
      expect(res.headers.get('content-length')).toBe('10');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('accept-ranges')).toBe('bytes');
      // Only the allowlisted image types are served inline: text is a download.
      expect(res.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''data.txt`);
      const etag = res.headers.get('etag')!;
      expect(etag).toMatch(/^"[\w-]{43}"$/);
      const cached = await fetch(url, { headers: { 'If-None-Match': etag } });
      expect(cached.status).toBe(304);
      const part = await fetch(url, { headers: { Range: 'bytes=2-5' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe('bytes 2-5/10');
      expect(await part.text()).toBe('2345');
      const suffix = await fetch(url, { headers: { Range: 'bytes=-3' } });
      expect(await suffix.text()).toBe('789');
      const bad = await fetch(url, { headers: { Range: 'bytes=20-' } });
      expect(bad.status).toBe(416);
      expect(bad.headers.get('content-range')).toBe('bytes */10');
      const head = await fetch(url, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe('10');
      const missing = await fetch(`${t.url}/files/test-app/nope.txt`);
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ code: 101, error: 'File not found.' });
      const otherApp = await fetch(`${t.url}/files/other-app/${up.json.name}`);
      expect(otherApp.status).toBe(404);
      // A name that could not have been stored never reaches the adapter (no path traversal).
      for (const probe of ['..%2Fmeta%2Fx', '..%2F..%2Fkeys', `..%2Fdata%2F${up.json.name}`]) {
        const res = await fetch(`${t.url}/files/test-app/${probe}`);
        expect(res.status, probe).toBe(404);
        expect(await res.json()).toEqual({ code: 101, error: 'File not found.' });
      }
    });

    it('serves HTML and SVG as attachments', async () => {
      for (const [name, type] of [
        ['page.html', 'text/html'],
        ['pic.svg', 'image/svg+xml'],
      ]) {
        const up = await upload(t, name!, '<svg onload="alert(1)"/>', {
          ...credentialHeaders('master'),
          'Content-Type': type!,
        });
        const res = await fetch(up.json.url.replace('https://files.example.test/api', t.url));
        expect(res.headers.get('content-type')).toBe(type);
        expect(res.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''${name}`);
        expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
      }
    });

    it('File values round-trip, the url rebuilt from the public address', async () => {
      const up = await upload(t, 'avatar.png', 'png-bytes', {
        ...credentialHeaders('master'),
        'Content-Type': 'image/png',
      });
      const created = await t.request('POST', '/classes/Profile', {
        as: 'master',
        body: { photo: { __type: 'File', name: up.json.name, url: 'https://stale.example/old' } },
      });
      expect(created.status).toBe(201);
      const read = await t.request('GET', `/classes/Profile/${created.json.objectId}`, { as: 'master' });
      expect(read.json.photo).toEqual({
        __type: 'File',
        name: up.json.name,
        url: `https://files.example.test/api/files/test-app/${up.json.name}`,
      });
      // Referenced: not an orphan; the row's delete does not delete the file.
      const orphans = await t.request('GET', '/files/orphans', { as: 'master' });
      expect(orphans.json.results.map((f: { name: string }) => f.name)).not.toContain(up.json.name);
      await t.request('DELETE', `/classes/Profile/${created.json.objectId}`, { as: 'master' });
      const after = await t.request('GET', '/files/orphans', { as: 'master' });
      const orphan = after.json.results.find((f: { name: string }) => f.name === up.json.name);
      expect(orphan).toMatchObject({ contentType: 'image/png', size: 9 });
      expect((await fetch(`${t.url}/files/test-app/${up.json.name}`)).status).toBe(200);
    });

    it('File values nested in Array and Object fields count as references in the orphan report', async () => {
      const inArray = await upload(t, 'in-array.txt', 'a');
      const inObject = await upload(t, 'in-object.txt', 'b');
      const loose = await upload(t, 'loose.txt', 'c');
      const created = await t.request('POST', '/classes/Album', {
        as: 'master',
        body: {
          pages: [{ caption: 'one', image: { __type: 'File', name: inArray.json.name } }],
          meta: { cover: { deep: [{ __type: 'File', name: inObject.json.name }] } },
        },
      });
      expect(created.status, created.text).toBe(201);
      const names = async () =>
        (await t.request('GET', '/files/orphans', { as: 'master' })).json.results.map(
          (f: { name: string }) => f.name,
        );
      const report = await names();
      expect(report).toContain(loose.json.name);
      expect(report).not.toContain(inArray.json.name);
      expect(report).not.toContain(inObject.json.name);
      await t.request('DELETE', `/classes/Album/${created.json.objectId}`, { as: 'master' });
      expect(await names()).toEqual(expect.arrayContaining([inArray.json.name, inObject.json.name]));
    });

    it("a user's own row (sign-up, login, /users/me) carries File urls rebuilt like any read", async () => {
      const up = await upload(t, 'me.png', 'png', {
        ...credentialHeaders('master'),
        'Content-Type': 'image/png',
      });
      const signUp = await t.request('POST', '/users', {
        body: { username: 'withavatar', password: 'pw', avatar: { __type: 'File', name: up.json.name } },
      });
      expect(signUp.status).toBe(201);
      const url = `https://files.example.test/api/files/test-app/${up.json.name}`;
      expect(signUp.json.avatar).toEqual({ __type: 'File', name: up.json.name, url });
      const me = await t.request('GET', '/users/me', { sessionToken: signUp.json.sessionToken });
      expect(me.json.avatar).toEqual({ __type: 'File', name: up.json.name, url });
    });

    it('deletes files with the master key only; the orphan report is master only', async () => {
      const up = await upload(t, 'gone.txt', 'bye');
      const refused = await t.request('DELETE', `/files/${up.json.name}`, { sessionToken: userToken });
      expect(refused).toMatchObject({
        status: 403,
        json: { code: 119, error: 'unauthorized: master key is required' },
      });
      const report = await t.request('GET', '/files/orphans', { sessionToken: userToken });
      expect(report).toMatchObject({
        status: 403,
        json: { code: 119, error: 'unauthorized: master key is required' },
      });
      expect((await t.request('DELETE', `/files/${up.json.name}`, { as: 'master' })).status).toBe(200);
      expect((await fetch(`${t.url}/files/test-app/${up.json.name}`)).status).toBe(404);
      const again = await t.request('DELETE', `/files/${up.json.name}`, { as: 'master' });
      expect(again).toMatchObject({ status: 400, json: { code: 153, error: 'Could not delete file.' } });
    });
  });
}

describe('file upload options', () => {
  it('enableForPublic lets key-only callers upload; enableForAuthenticatedUser false refuses users', async () => {
    const t = await startService({
      fileUpload: { enableForPublic: true, enableForAuthenticatedUser: false },
    });
    try {
      const pub = await upload(t, 'p.txt', 'x', {
        ...credentialHeaders('rest'),
        'Content-Type': 'text/plain',
      });
      expect(pub.status).toBe(201);
      const user = await t.request('POST', '/users', { body: { username: 'u1', password: 'pw-123456' } });
      const refused = await upload(t, 'p.txt', 'x', {
        ...credentialHeaders('rest'),
        'X-Backend-Session-Token': user.json.sessionToken,
      });
      expect(refused).toMatchObject({
        status: 400,
        json: { code: 130, error: 'File upload by authenticated user is disabled.' },
      });
      const noKeys = await upload(t, 'p.txt', 'x', { 'Content-Type': 'text/plain' });
      expect(noKeys).toMatchObject({ status: 403, json: { code: 119, error: 'unauthorized' } });
    } finally {
      await t.close();
    }
  });
});
