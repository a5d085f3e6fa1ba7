/**
 * How long building an automatic index blocks writes (docs/protocol.md#performance):
 * `node --import tsx bench/auto-index-build.ts [rows]` (default 100,000; BENCH_DATABASE_URI for a
 * PostgreSQL store, e.g. a fresh schema's URI). It seeds a class with `rows` rows, records a find
 * shape that scans, then builds its index while creates go on through the REST API one after
 * another, and prints the build time and the slowest create during it against the slowest before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createService } from '../server/src/index.ts';
import type { SqlDriver } from '../server/src/storage/sql/driver.ts';

const rows = Number(process.argv[2] ?? 100_000);
const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-auto-index-'));
const keys = { appId: 'bench', masterKey: 'bench-master-key-0123' };
const service = await createService({
  ...keys,
  dataDir,
  logLevel: 'warn',
  rateLimit: [],
  autoIndex: { minRows: 0, minSightings: 1, checkIntervalMs: 3_600_000 },
  ...(process.env.BENCH_DATABASE_URI ? { databaseURI: process.env.BENCH_DATABASE_URI } : {}),
});
const { url } = await service.listen(0, '127.0.0.1');
const headers = {
  'X-Backend-Application-Id': keys.appId,
  'X-Backend-Master-Key': keys.masterKey,
  'Content-Type': 'application/json',
};
const call = (method: string, p: string, body?: unknown) =>
  fetch(`${url}${p}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });

try {
  await call('POST', '/classes/Item', { score: 0, label: 'first' });
  const driver = (service.core.store as unknown as { driver: SqlDriver }).driver;
  const seeded = performance.now();
  const series =
    driver.dialect.name === 'postgres'
      ? `SELECT i FROM generate_series(1, ${rows}) AS g(i)`
      : `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows}) SELECT i FROM c`;
  await driver.exec(
    `INSERT INTO "Item" ("objectId", "createdAt", "updatedAt", "score", "label") ` +
      `SELECT 'seed' || i, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z', (i * 7919) % ${rows}, 'row ' || i FROM (${series}) AS s`,
  );
  console.log(`seeded ${rows} rows in ${Math.round(performance.now() - seeded)} ms`);
  const where = encodeURIComponent(JSON.stringify({ score: { $gte: 10, $lt: 20 } }));
  const find = async () => {
    const started = performance.now();
    await (await call('GET', `/classes/Item?where=${where}&limit=100`)).json();
    return performance.now() - started;
  };
  const scanMs = await find();

  // Creates one after another, each with its start and end; those that overlap the build are its.
  let stop = false;
  const creates: Array<[number, number]> = [];
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      const started = performance.now();
      const res = await call('POST', '/classes/Item', { score: i, label: `w${i}` });
      if (res.status !== 201) throw new Error(`create answered ${res.status}`);
      await res.arrayBuffer();
      creates.push([started, performance.now()]);
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  const started = performance.now();
  await service.core.store.performance!.tick();
  const ended = performance.now();
  const buildMs = ended - started;
  await new Promise((r) => setTimeout(r, 200));
  stop = true;
  await writer;
  const during = creates.filter(([a, b]) => a <= ended && b >= started).map(([a, b]) => b - a);
  const before = creates.filter(([, b]) => b < started).map(([a, b]) => b - a);
  const [index] = service.core.store.performance!.report().indexes;
  const indexedMs = await find();
  const max = (xs: number[]) => Math.max(...xs).toFixed(1);
  console.log(
    `${driver.dialect.name}: built ${index?.name} on ${rows} rows in ${buildMs.toFixed(0)} ms; ` +
      `slowest create during the build ${max(during)} ms (${during.length} creates), before it ${max(before)} ms ` +
      `(${before.length}); the find: ${scanMs.toFixed(1)} ms scanning, ${indexedMs.toFixed(1)} ms with the index; ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
} finally {
  await service.close();
  rmSync(dataDir, { recursive: true, force: true });
}
