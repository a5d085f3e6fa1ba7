import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialHeaders, startService, type TestService } from './helpers/service.ts';

const MB = 1024 * 1024;
const TOTAL = 500 * MB;
/** How much the process's resident memory may grow while 500 MB pass through it (measured: about 40 MB, garbage not yet collected; buffering the body would grow it by 500 MB). */
const RSS_BUDGET = 64 * MB;

/** Samples the process's RSS until stopped; answers the peak growth over the starting value. */
function watchRss() {
  global.gc?.();
  const start = process.memoryUsage.rss();
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 10);
  return () => {
    clearInterval(timer);
    peak = Math.max(peak, process.memoryUsage.rss());
    return peak - start;
  };
}

/** 1 MiB chunks whose first bytes carry their index, so the bytes differ along the file. */
function chunkAt(i: number, chunk: Buffer): Buffer {
  chunk.writeUInt32BE(i, 0);
  return chunk;
}

describe('streaming uploads and downloads', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ maxUploadSize: '600mb' });
  });
  afterAll(() => t.close());

  it('a 500 MB upload and its download never hold more than a few MB in memory', async () => {
    const chunk = Buffer.alloc(MB, 7);
    const expected = createHash('sha256');
    const stop = watchRss();
    const uploaded = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${t.url}/files/large.bin`,
        {
          method: 'POST',
          headers: {
            ...credentialHeaders('master'),
            'Content-Type': 'application/octet-stream',
            'Content-Length': String(TOTAL),
          },
        },
        (res) => {
          let body = '';
          res.on('data', (d) => {
            body += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      let i = 0;
      const write = () => {
        while (i < TOTAL / MB) {
          const next = chunkAt(i++, chunk);
          expected.update(next);
          if (!req.write(next)) {
            req.once('drain', write);
            return;
          }
        }
        req.end();
      };
      write();
    });
    const uploadGrowth = stop();
    expect(uploaded.status, uploaded.body).toBe(201);
    const { url } = JSON.parse(uploaded.body) as { url: string };

    const stopDownload = watchRss();
    const res = await fetch(url.replace(/^http:\/\/localhost:\d+\/api/, t.url));
    expect(res.headers.get('content-length')).toBe(String(TOTAL));
    const got = createHash('sha256');
    let size = 0;
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
      got.update(part);
      size += part.byteLength;
    }
    const downloadGrowth = stopDownload();
    expect(size).toBe(TOTAL);
    expect(got.digest('hex')).toBe(expected.digest('hex'));
    console.log(
      `RSS growth: upload ${(uploadGrowth / MB).toFixed(1)} MB, download ${(downloadGrowth / MB).toFixed(1)} MB`,
    );
    expect(uploadGrowth).toBeLessThan(RSS_BUDGET);
    expect(downloadGrowth).toBeLessThan(RSS_BUDGET);
  }, 120_000);
});
