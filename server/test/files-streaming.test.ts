import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialHeaders, KEYS } from './helpers/keys.ts';

const MB = 1024 * 1024;
/** The size of the measured transfer, each way. */
const TOTAL = 500 * MB;
/**
 * How much more memory the service may hold while the transfer runs than before it: the
 * JavaScript heap plus the Buffers (`heapUsed + arrayBuffers`), each sample taken right after full
 * collections, so it is what the service still holds, not garbage waiting for the collector.
 * Buffering the body would hold all 500 MB; streaming holds a few chunks of 64 to 256 KB
 * (measured on both adapters: under 1 MB).
 */
const LIVE_BUDGET = 8 * MB;
/**
 * The resident memory of the service's process, a coarser check of the same: besides what is held
 * it counts garbage made between two samples and memory the allocator and SQLite's page cache
 * keep for reuse (measured: 8 to 30 MB).
 */
const RSS_BUDGET = 64 * MB;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const INDEX = pathToFileURL(path.join(HERE, '../src/index.ts')).href;

/**
 * The service in a child process of its own (so the test's own buffers, hashing and the test runner
 * do not count), started with --expose-gc. On `measure` it takes its baseline after full
 * collections, then samples every 200 ms (full collections, then `process.memoryUsage()`; more
 * often would stall the transfer) until `stop`, and answers the peak growth of the held memory and
 * of the RSS. A transfer of 500 MB takes a few seconds, so dozens of samples.
 */
const CHILD = `
const { createService } = await import(${JSON.stringify(INDEX)});
const options = JSON.parse(process.env.BDS_STREAM_OPTIONS);
const service = await createService(options);
const { url } = await service.listen(0, '127.0.0.1');
const live = (m) => m.heapUsed + m.arrayBuffers;
let timer;
let base;
let peak;
const sample = () => {
  // The second collection first finishes the sweep of the first (Buffer memory is freed by a
  // sweeper after the collection that found it unreachable): what remains is held.
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  peak = { live: Math.max(peak.live, live(m)), rss: Math.max(peak.rss, m.rss) };
};
process.on('message', async (msg) => {
  if (msg === 'measure') {
    for (let i = 0; i < 3; i++) globalThis.gc();
    const m = process.memoryUsage();
    base = { live: live(m), rss: m.rss };
    peak = { ...base };
    timer = setInterval(sample, 200);
    process.send({ measuring: true });
  } else if (msg === 'stop') {
    clearInterval(timer);
    sample();
    process.send({ live: peak.live - base.live, rss: peak.rss - base.rss });
  } else if (msg === 'close') {
    await service.close();
    process.exit(0);
  }
});
process.send({ url });
`;

interface Child {
  url: string;
  ask<T>(message: string): Promise<T>;
  close(): Promise<void>;
}

async function startChild(adapter: 'fs' | 'database', dataDir: string): Promise<Child> {
  const options = {
    ...KEYS,
    dataDir,
    host: '127.0.0.1',
    port: 0,
    logLevel: 'warn',
    maxUploadSize: '600mb',
    files: { adapter },
  };
  const child: ChildProcess = spawn(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', CHILD],
    {
      cwd: path.join(HERE, '../..'),
      env: { ...process.env, BDS_STREAM_OPTIONS: JSON.stringify(options) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the service exited (${code})`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve(m as T);
      });
    });
  const { url } = await next<{ url: string }>();
  return {
    url,
    ask<T>(message: string) {
      const answer = next<T>();
      child.send(message);
      return answer;
    },
    async close() {
      const exited = new Promise((r) => child.once('exit', r));
      child.send('close');
      await exited;
    },
  };
}

/** 1 MiB chunks whose first bytes carry their index, so the bytes differ along the file. */
function chunkAt(i: number, chunk: Buffer): Buffer {
  chunk.writeUInt32BE(i, 0);
  return chunk;
}

/** Uploads `total` bytes in 1 MiB chunks (respecting back-pressure); answers the status, body and hash. */
function uploadStream(url: string, total: number) {
  const chunk = Buffer.alloc(MB, 7);
  const hash = createHash('sha256');
  return new Promise<{ status: number; body: string; sha256: string }>((resolve, reject) => {
    const req = request(
      `${url}/files/large.bin`,
      {
        method: 'POST',
        headers: {
          ...credentialHeaders('master'),
          'Content-Type': 'application/octet-stream',
          'Content-Length': String(total),
        },
      },
      (res) => {
        let body = '';
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, sha256: hash.digest('hex') }));
      },
    );
    req.on('error', reject);
    let i = 0;
    const write = () => {
      while (i < total / MB) {
        const next = chunkAt(i++, chunk);
        hash.update(next);
        if (!req.write(next)) {
          req.once('drain', write);
          return;
        }
      }
      req.end();
    };
    write();
  });
}

/** Downloads a file url, hashing it as it comes; answers its size, Content-Length and hash. */
function downloadStream(url: string) {
  return new Promise<{ size: number; length: string | undefined; sha256: string }>((resolve, reject) => {
    request(url, (res) => {
      const hash = createHash('sha256');
      let size = 0;
      res.on('data', (part: Buffer) => {
        hash.update(part);
        size += part.byteLength;
      });
      res.on('end', () =>
        resolve({ size, length: res.headers['content-length'], sha256: hash.digest('hex') }),
      );
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

for (const adapter of ['fs', 'database'] as const) {
  describe(`streaming uploads and downloads (${adapter} adapter)`, () => {
    let child: Child;
    let dataDir: string;
    beforeAll(async () => {
      dataDir = mkdtempSync(path.join(tmpdir(), 'bds-stream-'));
      child = await startChild(adapter, dataDir);
    }, 30_000);
    afterAll(async () => {
      await child?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it(`a ${TOTAL / MB} MB upload and its download never hold more than a few MB in the service`, async () => {
      const localUrl = (url: string) => url.replace(/^http:\/\/[^/]+\/api/, child.url);
      // Warm-up: every code path of the transfer runs once before the baseline.
      const warm = await uploadStream(child.url, 8 * MB);
      expect(warm.status, warm.body).toBe(201);
      expect((await downloadStream(localUrl(JSON.parse(warm.body).url))).size).toBe(8 * MB);

      await child.ask('measure');
      const uploaded = await uploadStream(child.url, TOTAL);
      const upload = await child.ask<{ live: number; rss: number }>('stop');
      expect(uploaded.status, uploaded.body).toBe(201);

      await child.ask('measure');
      const downloaded = await downloadStream(localUrl(JSON.parse(uploaded.body).url));
      const download = await child.ask<{ live: number; rss: number }>('stop');
      expect(downloaded.length).toBe(String(TOTAL));
      expect(downloaded.size).toBe(TOTAL);
      expect(downloaded.sha256).toBe(uploaded.sha256);

      const mb = (n: number) => (n / MB).toFixed(1);
      console.log(
        `${adapter}: live growth upload ${mb(upload.live)} MB, download ${mb(download.live)} MB; ` +
          `RSS growth upload ${mb(upload.rss)} MB, download ${mb(download.rss)} MB`,
      );
      expect(upload.live).toBeLessThan(LIVE_BUDGET);
      expect(download.live).toBeLessThan(LIVE_BUDGET);
      expect(upload.rss).toBeLessThan(RSS_BUDGET);
      expect(download.rss).toBeLessThan(RSS_BUDGET);
    }, 120_000);
  });
}
