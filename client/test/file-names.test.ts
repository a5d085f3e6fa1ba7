import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from '../../server/test/helpers/service.ts';
import { ArgumentError, createClient } from '../src/index.node.ts';
import {
  fileContentType,
  isIssuedFileName,
  storedFileHeaders,
  toUploadName,
  uploadNameOf,
} from '../src/protocol/index.ts';

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

describe('the protocol file rules', () => {
  const HEX = '0123456789abcdef0123456789abcdef';

  it('toUploadName makes any browser file name one the upload takes, keeping its end', () => {
    expect(toUploadName('cat picture.png')).toBe('cat picture.png');
    expect(toUploadName('résumé (final).pdf')).toBe('r_sum_ _final_.pdf');
    expect(toUploadName('.env')).toBe('_.env');
    expect(toUploadName('')).toBe('_');
    const long = toUploadName(`${'x'.repeat(300)}.tar.gz`);
    expect(long).toHaveLength(127);
    expect(long.endsWith('.tar.gz')).toBe(true);
    for (const name of ['a/b\\c', '../../x', `${'é'.repeat(200)}`, ' lead']) {
      expect(isIssuedFileName(`${HEX}_${toUploadName(name)}`), name).toBe(true);
    }
  });

  it('uploadNameOf drops only the issued prefix', () => {
    expect(uploadNameOf(`${HEX}_a_b.txt`)).toBe('a_b.txt');
    expect(uploadNameOf('plain_name.txt')).toBe('plain_name.txt');
  });

  it('fileContentType keeps the essence in lower case, or octet-stream', () => {
    expect(fileContentType('IMAGE/PNG')).toBe('image/png');
    expect(fileContentType('text/html; charset=utf-8')).toBe('text/html');
    expect(fileContentType('not a type')).toBe('application/octet-stream');
    expect(fileContentType(undefined)).toBe('application/octet-stream');
  });

  it('storedFileHeaders: allowlisted images inline; the rest a download; scripts as bytes', () => {
    const safety = {
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': "default-src 'none'; sandbox",
    };
    expect(storedFileHeaders('Image/PNG', `${HEX}_a.png`)).toEqual({
      'Content-Type': 'image/png',
      ...safety,
    });
    expect(storedFileHeaders('image/svg+xml', `${HEX}_a b.svg`)).toEqual({
      'Content-Type': 'image/svg+xml',
      ...safety,
      'Content-Disposition': "attachment; filename*=UTF-8''a%20b.svg",
    });
    expect(storedFileHeaders('Text/JavaScript; charset=utf-8', `${HEX}_x.js`)).toEqual({
      'Content-Type': 'application/octet-stream',
      ...safety,
      'Content-Disposition': "attachment; filename*=UTF-8''x.js",
    });
    expect(storedFileHeaders('text/css', `${HEX}_x.css`)['Content-Type']).toBe('application/octet-stream');
  });
});
