import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from '../../server/test/helpers/service.ts';
import { ArgumentError, createClient } from '../src/index.node.ts';

/**
 * downloadFile and downloadBlob fetch only files of the service, built from an issued name: a url
 * (given as the name or as the File value's url) or a made-up name is refused before any request.
 */

let svc: TestService;
/** A server that must never be asked anything: it counts the requests it gets. */
let elsewhere: Server;
let elsewhereUrl: string;
let hits = 0;
/** Every url the client fetched. */
const fetched: string[] = [];

const client = () =>
  createClient({
    serverURL: svc.url,
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    masterKey: KEYS.masterKey,
    fetch: (input, init) => {
      fetched.push(String(input instanceof Request ? input.url : input));
      return globalThis.fetch(input, init);
    },
  });

beforeAll(async () => {
  svc = await startService();
  elsewhere = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<script>alert(1)</script>');
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/page.html`;
});
afterAll(async () => {
  await new Promise((resolve) => elsewhere.close(resolve));
  await svc.close();
});

describe('client file downloads', () => {
  it('refuses a url or a name the service never issues with ArgumentError, sending nothing', async () => {
    const c = client();
    fetched.length = 0;
    const refused: Array<[string | { name: string; url?: string }, string]> = [
      [elsewhereUrl, `${JSON.stringify(elsewhereUrl)} is not the name of a file stored by this service.`],
      [
        { name: elsewhereUrl },
        `${JSON.stringify(elsewhereUrl)} is not the name of a file stored by this service.`,
      ],
      ['report.pdf', '"report.pdf" is not the name of a file stored by this service.'],
      ['../../etc/passwd', '"../../etc/passwd" is not the name of a file stored by this service.'],
      [
        `${'A'.repeat(32)}_x.txt`,
        `"${'A'.repeat(32)}_x.txt" is not the name of a file stored by this service.`,
      ],
    ];
    for (const [file, text] of refused) {
      await expect(c.downloadFile(file)).rejects.toThrow(new ArgumentError(text));
      await expect(c.downloadBlob(file)).rejects.toThrow(new ArgumentError(text));
    }
    expect(fetched).toEqual([]);
    expect(hits).toBe(0);
  });

  it("fetches a File value by its name from the service, never from the value's url", async () => {
    const c = client();
    const up = await c.uploadFile('hello.txt', new TextEncoder().encode('hello'), {
      contentType: 'text/plain',
    });
    expect(up.success).toBe(true);
    if (!up.success) return;
    fetched.length = 0;
    const got = await c.downloadBlob({ name: up.data.name, url: elsewhereUrl });
    expect(got.success).toBe(true);
    if (got.success) expect(await got.data.text()).toBe('hello');
    expect(fetched).toEqual([`${svc.url}/files/${KEYS.appId}/${up.data.name}`]);
    expect(hits).toBe(0);
  });
});
