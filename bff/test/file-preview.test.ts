import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialHeaders } from '../../server/test/helpers/service.ts';
import { type BffFetch, type StartedBff, startBff, TEST_PASSWORD } from './helpers/bff.ts';

/**
 * The console's file preview (`GET /bff/apps/:app/files/:name`) serves only files the service
 * stored, by their issued name: a url or any other name taken from data is refused without a
 * single outgoing request, and what is served never runs on the console's origin.
 */

const APP = '/bff/apps/test-app';
let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
/** An internal address the bff must never be made to fetch: it counts the requests it gets. */
let internal: Server;
let internalUrl: string;
let hits = 0;

beforeAll(async () => {
  internal = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<script>alert(document.domain)</script>');
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}/latest/meta-data`;
  t = await startBff();
  admin = await t.login('admin', TEST_PASSWORD);
  viewer = await t.login('viewer', TEST_PASSWORD);
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => internal.close(resolve));
});

/** Uploads straight to the service (as an app would), answering the issued name. */
async function stored(name: string, content: string, type: string): Promise<string> {
  const res = await fetch(`${t.service.url}/files/${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { ...credentialHeaders('master'), 'Content-Type': type },
    body: content,
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { name: string }).name;
}

describe('console file preview', () => {
  it('refuses a url or a made-up name with 400 and 122, making no outgoing request', async () => {
    for (const who of [viewer, admin]) {
      for (const name of [
        internalUrl,
        `https://127.0.0.1:${new URL(internalUrl).port}/x.png`,
        'report.pdf',
      ]) {
        const res = await who.get(`${APP}/files/${encodeURIComponent(name)}`);
        expect(res.status, name).toBe(400);
        expect(res.json).toEqual({
          code: 122,
          error: `${JSON.stringify(name)} is not the name of a file stored by this service.`,
        });
      }
    }
    expect(hits).toBe(0);
  });

  it('serves an allowlisted image inline, never sniffed, in a sandbox, privately cached', async () => {
    const name = await stored('dot.png', 'png-bytes', 'image/png');
    const res = await viewer.get(`${APP}/files/${name}`);
    expect(res.status).toBe(200);
    expect(res.text).toBe('png-bytes');
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(res.headers.get('content-disposition')).toBeNull();
    expect(res.headers.get('cache-control')).toBe('private, max-age=300');
  });

  it('serves HTML as an attachment and script as bytes, never as a page or a script', async () => {
    const page = await stored('page.html', '<script>alert(1)</script>', 'text/html');
    const html = await viewer.get(`${APP}/files/${page}`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toBe('text/html');
    expect(html.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''page.html`);
    expect(html.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(html.headers.get('x-content-type-options')).toBe('nosniff');
    const script = await stored('evil.js', 'alert(1)', 'text/javascript');
    const js = await viewer.get(`${APP}/files/${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('application/octet-stream');
    expect(js.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''evil.js`);
  });

  it('lists File values stored before the rule (foreign names) for every console user', async () => {
    const schema = await t.service.request('POST', '/schemas/Legacy', {
      as: 'master',
      body: { fields: { picture: { type: 'File' } } },
    });
    expect(schema.status, schema.text).toBe(200);
    const legacy = t.service.service.core.schemas.get('Legacy')!;
    await t.service.service.core.store.insert(legacy, {
      objectId: 'legacyAAAA',
      createdAt: new Date().toISOString(),
      values: { picture: { value: { __type: 'File', name: internalUrl }, type: 'File' } },
      acl: null,
      relations: [],
    });
    for (const who of [viewer, admin]) {
      const res = await who.get(`${APP}/files/foreign`);
      expect(res.status, res.text).toBe(200);
      expect(res.json).toEqual({
        results: [{ className: 'Legacy', objectId: 'legacyAAAA', field: 'picture', name: internalUrl }],
      });
    }
    expect(hits).toBe(0);
  });
});
