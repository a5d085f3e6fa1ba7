/**
 * Child process: the service under test. Starts it on a loopback port with a fresh data dir,
 * creates the bench class through the API (master key), seeds rows through the write
 * pipeline in transactions of 10,000 (the path POST /classes takes), then reports its url and the seeded ids.
 */
import { rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { createService } from '../server/src/index.ts';
import { MASTER } from '../server/src/kernel/caller.ts';
import { hashPassword } from '../server/src/users/passwords.ts';
import {
  BENCH_CLASS,
  BENCH_KEYS,
  benchItemRows,
  exitWithParent,
  MOUNT_PATH,
  OWNERS,
  PRIVATE_CLASS,
  privateItemRows,
  READER,
  SIGNED_IN_IDS,
  type SignedIn,
  send,
  startProfiler,
} from './common.ts';

let profiler: { stop(): Promise<void> } | undefined;

async function main(): Promise<void> {
  const dataDir = process.env.BENCH_DATA_DIR;
  const rows = Number(process.env.BENCH_ROWS ?? 100_000);
  if (!dataDir) throw new Error('BENCH_DATA_DIR is required');

  const service = await createService({
    ...BENCH_KEYS,
    dataDir,
    port: 0,
    host: '127.0.0.1',
    mountPath: MOUNT_PATH,
    shutdownGraceMs: 1_000,
    // One JSON line per request, as in production; BENCH_LOG_LEVEL=warn measures without them.
    logLevel: process.env.BENCH_LOG_LEVEL ?? 'info',
    // The login workload logs in far faster than the default limits allow.
    rateLimit: [],
    // BENCH_ROW_CACHE_MB=0 measures reads by id without the embedded store's row cache.
    ...(process.env.BENCH_ROW_CACHE_MB ? { rowCacheMB: Number(process.env.BENCH_ROW_CACHE_MB) } : {}),
    // BENCH_AUTO_INDEX=off measures without automatic indexes; a number of ms checks for them that
    // often (the default, a minute, is longer than a workload), so they are built during warm-up.
    ...autoIndexOption(process.env.BENCH_AUTO_INDEX),
    // BENCH_HISTORY=off measures writes without the row history (on by default, as in the service).
    ...(process.env.BENCH_HISTORY === 'off' ? { history: { enabled: false } } : {}),
    // BENCH_REQUEST_LOG=off: the service keeps no request lines for GET /logs (requestLogSize 0).
    ...(process.env.BENCH_REQUEST_LOG === 'off' ? { requestLogSize: 0 } : {}),
    // `--store postgres` (bench/run.ts): the PostgreSQL store, and Redis between instances.
    ...(process.env.BENCH_DATABASE_URI ? { databaseURI: process.env.BENCH_DATABASE_URI } : {}),
    ...(process.env.BENCH_REDIS_URL
      ? { redisURL: process.env.BENCH_REDIS_URL, redis: { keyPrefix: process.env.BENCH_REDIS_PREFIX } }
      : {}),
  });
  exitWithParent(async (orphaned) => {
    await profiler?.stop();
    await service.close();
    // The driver normally removes its temp dir; if it was killed, this child cleans up instead.
    const tempDir = process.env.BENCH_TEMP_DIR;
    if (orphaned && tempDir) rmSync(tempDir, { recursive: true, force: true });
  });
  const { url } = await service.listen(0, '127.0.0.1');
  // A second instance on a store another one seeded: ready at once.
  if (process.env.BENCH_SEED === '0') {
    send({ type: 'ready', url });
    return;
  }

  const res = await fetch(`${url}/schemas/${BENCH_CLASS}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Backend-Application-Id': BENCH_KEYS.appId,
      'X-Backend-Master-Key': BENCH_KEYS.masterKey,
    },
    body: JSON.stringify({
      className: BENCH_CLASS,
      fields: {
        n: { type: 'Number' },
        n2: { type: 'Number' },
        name: { type: 'String' },
        tags: { type: 'Array' },
      },
      indexes: { n_1: { n: 1 } },
    }),
  });
  if (res.status !== 200)
    throw new Error(`POST /schemas/${BENCH_CLASS} answered ${res.status}: ${await res.text()}`);

  const { store } = service.core;
  const master = { caller: MASTER, source: 'system' as const, context: {} };
  const ids: string[] = new Array(rows);
  const started = performance.now();
  const chunk = 10_000;
  const bodies = benchItemRows(rows);
  for (let from = 0; from < rows; from += chunk) {
    // The write pipeline, as POST /classes takes it, a transaction per chunk.
    await store.transaction(async () => {
      for (let i = from; i < Math.min(rows, from + chunk); i++) {
        const body = bodies.next().value!;
        ids[i] = (await service.data.writes.create(master, BENCH_CLASS, body)).objectId;
      }
    });
  }
  const signedIn = await seedPrivate(service, url);
  const seedMs = performance.now() - started;
  // Profiled from here: the workloads, not the seeding.
  if (process.env.BENCH_PROFILE_DIR) profiler = await startProfiler(process.env.BENCH_PROFILE_DIR, 'service');
  send({ type: 'ready', url, seedMs, ids, signedIn });
}

/**
 * Issue 11's shape (`privateItemRows`): PRIVATE_ROWS rows with a `score` (no index), even rows
 * public-read, odd rows readable by role:Readers and their owner (one of OWNERS users); the
 * reader, a member of Readers, signs in with a password like any user.
 */
async function seedPrivate(
  service: Awaited<ReturnType<typeof createService>>,
  url: string,
): Promise<SignedIn> {
  const master = { caller: MASTER, source: 'system' as const, context: {} };
  const { writes } = service.data;
  const call = async (method: string, path: string, body: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        'Content-Type': 'application/json',
        'X-Backend-Application-Id': BENCH_KEYS.appId,
        'X-Backend-REST-API-Key': BENCH_KEYS.restAPIKey,
        ...extra,
      },
      body: JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const asMaster = { 'X-Backend-Master-Key': BENCH_KEYS.masterKey };
  const reader = await call('POST', '/users', READER);
  const owners: string[] = [];
  for (let i = 0; i < OWNERS; i++) {
    owners.push(
      (await writes.create({ ...master, source: 'account' }, '_User', { username: `owner-${i}` })).objectId,
    );
  }
  await call(
    'POST',
    '/roles',
    {
      name: 'Readers',
      ACL: { '*': { read: true } },
      users: {
        __op: 'AddRelation',
        objects: [{ __type: 'Pointer', className: '_User', objectId: reader.objectId }],
      },
    },
    asMaster,
  );
  await call(
    'POST',
    `/schemas/${PRIVATE_CLASS}`,
    { fields: { score: { type: 'Number' }, label: { type: 'String' } } },
    asMaster,
  );
  const ids: string[] = [];
  await service.core.store.transaction(async () => {
    for (const row of privateItemRows(owners)) {
      const { objectId } = await writes.create(master, PRIVATE_CLASS, row);
      if (ids.length < SIGNED_IN_IDS) ids.push(objectId);
    }
  });
  const sessionToken = reader.sessionToken as string;
  // The incumbent comparison and the harness's test do not report the login's share of the hash.
  if (process.env.BENCH_HASH_PROBE === '0') return { sessionToken, ids };
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await hashPassword(READER.password);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  // One hash per core back to back for a few seconds: what hashing alone sustains on this machine
  // (memory-hard hashes running side by side slow each other down).
  let hashes = 0;
  const until = performance.now() + 3_000;
  const t0 = performance.now();
  await Promise.all(
    cpus().map(async () => {
      while (performance.now() < until) {
        await hashPassword(READER.password);
        hashes++;
      }
    }),
  );
  const parallelHashesPerSecond = (hashes * 1000) / (performance.now() - t0);
  return { sessionToken, ids, hashMs: times[2]!, parallelHashesPerSecond };
}

main().catch((err) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});

/** The service's `autoIndex` option for BENCH_AUTO_INDEX (`off`, or a check interval in ms). */
function autoIndexOption(value: string | undefined): {
  autoIndex?: { enabled?: boolean; checkIntervalMs?: number };
} {
  if (!value) return {};
  if (value === 'off') return { autoIndex: { enabled: false } };
  return { autoIndex: { checkIntervalMs: Number(value) } };
}
