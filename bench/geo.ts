/**
 * `npm run bench -- geo [--store sqlite|postgres|all]`: geo queries on a class of BENCH_GEO_ROWS
 * GeoPoints (default 20,000) spread over the globe, on the embedded store and on PostgreSQL (a
 * fresh schema of BENCH_DATABASE_URL, dropped at the end; its native point column and GiST index,
 * and PostGIS's geography index when the database has PostGIS).
 *
 * Each operator runs BENCH_GEO_QUERIES finds (default 100) one after another through the REST API
 * (master key, limit 100); the report gives the latency p50 and p99 and the mean number of rows
 * found, which must be the same on both stores.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createService } from '../server/src/index.ts';
import { seeded } from '../server/test/helpers/seeded.ts';
import { BENCH_KEYS, freshPostgresSchema, MOUNT_PATH } from './common.ts';

const ROWS = Number(process.env.BENCH_GEO_ROWS ?? 20_000);
const QUERIES = Number(process.env.BENCH_GEO_QUERIES ?? 100);

const gp = (latitude: number, longitude: number) => ({ __type: 'GeoPoint', latitude, longitude });

/** One where per query number: each operator around a seeded point. */
const OPERATORS: Record<string, (lat: number, lng: number) => unknown> = {
  '$within $box (5 x 5 degrees)': (lat, lng) => ({
    loc: { $within: { $box: [gp(lat, lng), gp(lat + 5, lng + 5)] } },
  }),
  '$geoWithin $polygon (triangle)': (lat, lng) => ({
    loc: { $geoWithin: { $polygon: [gp(lat, lng), gp(lat + 6, lng), gp(lat, lng + 6)] } },
  }),
  '$geoWithin $centerSphere (0.05 rad)': (lat, lng) => ({
    loc: { $geoWithin: { $centerSphere: [[lng, lat], 0.05] } },
  }),
  '$nearSphere with $maxDistance (0.05 rad)': (lat, lng) => ({
    loc: { $nearSphere: gp(lat, lng), $maxDistance: 0.05 },
  }),
  '$centerSphere over the north pole (0.1 rad)': (_lat, lng) => ({
    loc: { $geoWithin: { $centerSphere: [[lng, 88], 0.1] } },
  }),
};

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

interface Measured {
  p50: number;
  p99: number;
  meanFound: number;
}

async function measure(store: 'sqlite' | 'postgres'): Promise<Map<string, Measured>> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-bench-geo-'));
  const schema = store === 'postgres' ? await freshPostgresSchema() : undefined;
  try {
    const service = await createService({
      ...BENCH_KEYS,
      dataDir,
      mountPath: MOUNT_PATH,
      logLevel: 'warn',
      rateLimit: [],
      ...(schema ? { databaseURI: schema.uri } : {}),
    });
    const { url } = await service.listen(0, '127.0.0.1');
    const headers = {
      'X-Backend-Application-Id': BENCH_KEYS.appId,
      'X-Backend-Master-Key': BENCH_KEYS.masterKey,
      'Content-Type': 'application/json',
    };
    const random = seeded(42);
    console.log(`bench: ${store}: seeding ${ROWS} GeoPoints...`);
    for (let start = 0; start < ROWS; start += 500) {
      const requests = Array.from({ length: Math.min(500, ROWS - start) }, () => ({
        method: 'POST',
        path: '/classes/Place',
        body: { loc: gp(random() * 180 - 90, random() * 360 - 180) },
      }));
      const res = await fetch(`${url}/batch`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ requests }),
      });
      if (res.status !== 200) throw new Error(`POST /batch answered ${res.status}: ${await res.text()}`);
    }
    const results = new Map<string, Measured>();
    for (const [name, where] of Object.entries(OPERATORS)) {
      const queryRandom = seeded(7);
      const latencies: number[] = [];
      let found = 0;
      for (let q = 0; q < QUERIES; q++) {
        const query = where(queryRandom() * 150 - 75, queryRandom() * 340 - 170);
        const started = performance.now();
        const res = await fetch(
          `${url}/classes/Place?limit=100&where=${encodeURIComponent(JSON.stringify(query))}`,
          { headers },
        );
        const body = (await res.json()) as { results?: unknown[] };
        latencies.push(performance.now() - started);
        if (res.status !== 200 || !body.results)
          throw new Error(`${name}: ${res.status} ${JSON.stringify(body)}`);
        found += body.results.length;
      }
      results.set(name, { p50: pct(latencies, 50), p99: pct(latencies, 99), meanFound: found / QUERIES });
    }
    await service.close();
    return results;
  } finally {
    await schema?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const flag = process.argv.indexOf('--store');
const chosen = flag > 0 ? process.argv[flag + 1] : 'all';
if (chosen !== 'sqlite' && chosen !== 'postgres' && chosen !== 'all') {
  console.error('bench: --store must be sqlite, postgres or all');
  process.exit(1);
}
const stores = chosen === 'all' ? (['sqlite', 'postgres'] as const) : ([chosen] as const);
const measured = new Map<string, Map<string, Measured>>();
for (const store of stores) measured.set(store, await measure(store));

console.log('');
console.log(`geo: ${ROWS} GeoPoints, ${QUERIES} finds per operator one after another (limit 100)`);
for (const name of Object.keys(OPERATORS)) {
  const cells = stores.map((store) => {
    const m = measured.get(store)!.get(name)!;
    return `${store} p50 ${m.p50.toFixed(2)} ms p99 ${m.p99.toFixed(2)} ms (${m.meanFound.toFixed(1)} found)`;
  });
  console.log(`  ${name.padEnd(44)} ${cells.join('   ')}`);
}
const counts = Object.keys(OPERATORS).map(
  (name) => new Set(stores.map((s) => measured.get(s)!.get(name)!.meanFound)),
);
if (counts.some((set) => set.size > 1)) {
  console.error('bench: the stores found different rows');
  process.exitCode = 1;
}
