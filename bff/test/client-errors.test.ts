import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StartedBff, startBff } from './helpers/bff.ts';

/** Sends raw bytes and reads the whole answer (the server closes the connection after it). */
function raw(url: string, request: string): Promise<{ status: number; headers: string; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, headers: head, body });
    });
    socket.end(request);
  });
}

describe('requests Node refuses before Express: the {code, error} shape', () => {
  let t: StartedBff;
  beforeAll(async () => {
    t = await startBff();
  });
  afterAll(async () => {
    await t?.close();
  });

  const tooLarge = {
    code: 116,
    error: 'The request line and headers exceed the limit of 16384 bytes.',
  };

  it('answers a URL over 16 KB with a JSON 431', async () => {
    const res = await raw(
      t.url,
      `GET /bff/apps?x=${'a'.repeat(17 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    );
    expect(res.status).toBe(431);
    expect(res.headers).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(res.body)).toEqual(tooLarge);
  });

  it('answers headers over 16 KB with a JSON 431, on the SPA path too', async () => {
    const res = await raw(
      t.url,
      `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(17 * 1024)}\r\n\r\n`,
    );
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body)).toEqual(tooLarge);
    // Through fetch as well (what a browser gets).
    const viaFetch = await fetch(`${t.url}/bff/session?q=${'c'.repeat(17 * 1024)}`);
    expect(viaFetch.status).toBe(431);
    expect(await viaFetch.json()).toEqual(tooLarge);
  });

  it('answers malformed HTTP with a JSON 400', async () => {
    const res = await raw(t.url, 'GARBAGE\r\n\r\n');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ code: 107, error: 'The request is not valid HTTP.' });
  });

  it('still serves requests just under the limit, and keeps serving after refusals', async () => {
    const res = await fetch(`${t.url}/bff/session?q=${'d'.repeat(8 * 1024)}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ code: 119, error: 'Not logged in.' });
  });
});
