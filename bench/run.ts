/**
 * `npm run bench`: load-tests the service with autocannon and compares get-by-id with a bare
 * node:http + better-sqlite3 baseline on the same data file.
 *
 * The service (bench/service.ts) and the baseline (bench/baseline.ts) each run in their own child
 * process (`node --import tsx`, bench/children.ts), so the load generator never shares an event loop
 * with a server. Everything lives in a temporary data dir that is removed at the end, also on failure.
 *
 * Environment: BENCH_DURATION (seconds per workload, default 5), BENCH_CONNECTIONS (default 32),
 * BENCH_WARMUP (unrecorded seconds before each workload, default 1), BENCH_ROWS (default 100000),
 * BENCH_ONLY (comma list of workload names or prefixes, e.g. `get-by-id,create`), BENCH_PROFILE_DIR
 * (profile the service and the baseline children and write their .cpuprofile files there), BENCH_LOG_LEVEL (the
 * service's log level, default info), BENCH_ROW_CACHE_MB (the service's rowCacheMB; 0 turns it off),
 * BENCH_AUTO_INDEX (`off`: no automatic indexes; a number: their check interval in ms, so that they
 * are built during warm-up), BENCH_HISTORY (`off`: no row history versions), BENCH_REQUEST_LOG
 * (`off`: no request lines kept for GET /logs).
 *
 * `npm run bench -- --store postgres [--instances 2]` runs the service's REST workloads on the
 * PostgreSQL store (a fresh schema of BENCH_DATABASE_URL, default the local `test` database, dropped
 * at the end), several instances sharing Redis (BENCH_REDIS_URL), the load generator's connections
 * spread over them; `--store all` runs SQLite, PostgreSQL and two PostgreSQL instances side by side.
 * Each PostgreSQL deployment's report line gives the deadlocks the database counted meanwhile.
 *
 * `npm run bench -- --vs-incumbent [--store sqlite|postgres|all]` runs every REST workload against
 * the service and the incumbent side by side, in rounds (bench/vs-incumbent.ts).
 */
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { cleanupOnExit, cleanupSync, setTempDir, startChild, stopChild } from './children.ts';
import { BENCH_CLASS, numberFromEnv, postgresDeadlocks, type SignedIn } from './common.ts';
import { type Deployed, type Deployment, deploy, storeArguments } from './deploy.ts';
import { CONNECTIONS, DURATION, fmt, type Measured, measure, table, WARMUP } from './measure.ts';
import { selected, workloads } from './workloads.ts';

const ROWS = Math.round(numberFromEnv('BENCH_ROWS', 100_000, 1));
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR ? path.resolve(process.env.BENCH_PROFILE_DIR) : undefined;

/** Targets from the issue. */
const TARGET_GET_RATIO = 0.5;
const TARGET_CREATE_RPS = 3_000;

// ---------------------------------------------------------------------------------------------
// Report

function report(results: Measured[], seedMs: number, signedIn?: SignedIn): boolean {
  const by = (name: string) => results.find((r) => r.workload.name === name);
  const baseline = by('get-by-id (baseline)');
  const get = by('get-by-id');
  const create = by('create');

  const rows = [
    [
      'workload',
      'target',
      'req/s',
      'p50 ms',
      'p99 ms',
      'of baseline',
      'CPU µs/req',
      'loop µs/req',
      'errors',
      'non-2xx',
      'requests',
    ],
  ];
  for (const r of results) {
    rows.push([
      r.workload.name,
      r.workload.target,
      fmt(r.rps),
      fmt(r.p50, 2),
      fmt(r.p99, 2),
      baseline ? `${fmt((r.rps / baseline.rps) * 100, 1)} %` : '',
      fmt(r.cpuPerRequest),
      fmt(r.loopPerRequest),
      fmt(r.errors),
      fmt(r.non2xx),
      fmt(r.total),
    ]);
  }
  console.log('');
  console.log(
    `node ${process.version}, ${cpus().length} cpus, ${fmt(ROWS)} rows seeded in ${fmt(seedMs / 1000, 1)} s, ` +
      `${CONNECTIONS} connections, ${DURATION} s per workload (+${WARMUP} s warmup)`,
  );
  console.log('');
  console.log(table(rows));
  console.log('');
  const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not run' : ok ? 'PASS' : 'FAIL');
  let getOk: boolean | undefined;
  if (get && baseline) {
    const ratio = get.rps / baseline.rps;
    getOk = ratio >= TARGET_GET_RATIO;
    console.log(
      `get-by-id service/baseline: ${fmt(ratio * 100, 1)} % (${fmt(get.rps)} / ${fmt(baseline.rps)} req/s); ` +
        `by CPU time per request (steadier on a shared machine): ${fmt((baseline.cpuPerRequest / get.cpuPerRequest) * 100, 1)} % ` +
        `(${fmt(baseline.cpuPerRequest)} / ${fmt(get.cpuPerRequest)} µs)`,
    );
  }
  const createOk = create ? create.rps >= TARGET_CREATE_RPS : undefined;
  if (baseline) {
    for (const r of results.filter((x) => x.workload.target11 !== undefined)) {
      const share = r.rps / baseline.rps;
      const byCpu = baseline.cpuPerRequest / r.cpuPerRequest;
      console.log(
        `issue 11: ${r.workload.name}: ${fmt(share * 100, 1)} % of the baseline's get-by-id (by CPU time: ${fmt(byCpu * 100, 1)} %; target ${fmt(r.workload.target11! * 100)} %): ${verdict(share >= r.workload.target11!)}`,
      );
    }
  }
  const login = by('login');
  if (login && signedIn?.hashMs && signedIn.parallelHashesPerSecond) {
    // What hashing alone allows: every core hashing back to back.
    const limit = (cpus().length * 1000) / signedIn.hashMs;
    const measured = signedIn.parallelHashesPerSecond;
    console.log(
      `login: ${fmt(login.rps, 1)} req/s; one password hash takes ${fmt(signedIn.hashMs, 1)} ms, so hashing alone allows ${fmt(limit, 1)} req/s on ${cpus().length} cores: ${fmt((login.rps / limit) * 100, 1)} % of it`,
    );
    console.log(
      `login: with one hash per core side by side the cores sustain ${fmt(measured, 1)} hashes/s: login reaches ${fmt((login.rps / measured) * 100, 1)} % of that; ` +
        `the main thread works ${fmt(login.loopPerRequest / 1000, 2)} ms per login around the hash, ${fmt((login.loopPerRequest / 1000 / signedIn.hashMs) * 100, 1)} % of the hash time`,
    );
  }
  const clean = results.every((r) => r.errors === 0 && r.non2xx === 0);
  console.log(
    `check: get-by-id >= ${TARGET_GET_RATIO * 100} % of baseline: ${verdict(getOk)}; ` +
      `create >= ${fmt(TARGET_CREATE_RPS)} req/s: ${verdict(createOk)}; ` +
      `no errors or non-2xx: ${verdict(clean)}`,
  );
  return getOk !== false && createOk !== false && clean;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const plan = selected(workloads([]));
  const count = plan.length;
  const budgetMs = 120_000 + count * (DURATION + WARMUP + 20) * 1000;
  const deadline = setTimeout(() => {
    console.error(`bench: not finished within ${budgetMs / 1000} s, stopping`);
    cleanupSync();
    process.exit(2);
  }, budgetMs);
  deadline.unref();

  const tempDir = mkdtempSync(path.join(tmpdir(), 'bds-bench-'));
  setTempDir(tempDir);
  const dataDir = path.join(tempDir, 'data');
  console.log(`bench: seeding ${fmt(ROWS)} rows of ${BENCH_CLASS} into a fresh data dir...`);
  const service = await startChild(
    'service.ts',
    {
      BENCH_DATA_DIR: dataDir,
      BENCH_TEMP_DIR: tempDir,
      BENCH_ROWS: String(ROWS),
      ...(PROFILE_DIR ? { BENCH_PROFILE_DIR: PROFILE_DIR } : {}),
    },
    120_000,
  );
  const ids = service.message.ids ?? [];
  if (ids.length !== ROWS) throw new Error(`the service child reported ${ids.length} ids, expected ${ROWS}`);
  const baseline = await startChild(
    'baseline.ts',
    {
      BENCH_DB_FILE: path.join(dataDir, 'data.sqlite'),
      ...(PROFILE_DIR ? { BENCH_PROFILE_DIR: PROFILE_DIR } : {}),
    },
    30_000,
  );

  const origins = {
    service: new URL(service.message.url).origin,
    baseline: new URL(baseline.message.url).origin,
  };
  const results: Measured[] = [];
  for (const w of selected(workloads(ids, service.message.signedIn))) {
    process.stdout.write(`bench: ${w.name} against the ${w.target}...`);
    const r = await measure(origins[w.target], w, (w.target === 'service' ? service : baseline).child);
    console.log(` ${fmt(r.rps)} req/s`);
    results.push(r);
  }

  await Promise.all([stopChild(service.child), stopChild(baseline.child)]);
  report(results, service.message.seedMs ?? 0, service.message.signedIn);
  if (PROFILE_DIR) console.log(`service CPU profile written to ${PROFILE_DIR}`);
  cleanupSync();
}

// ---------------------------------------------------------------------------------------------
// `npm run bench -- --store postgres [--instances 2]` and `npm run bench -- --store all` (issue 17)

/** The bare baseline's get-by-id on the SQLite deployment's data file. */
async function measureBaseline(deployed: Deployed): Promise<Measured> {
  const child = await startChild(
    'baseline.ts',
    { BENCH_DB_FILE: path.join(deployed.dataDir, 'data.sqlite') },
    30_000,
  );
  try {
    const w = workloads(deployed.ids).find((x) => x.target === 'baseline')!;
    process.stdout.write(`bench: ${w.name}...`);
    const r = await measure(new URL(child.message.url).origin, w, child.child);
    console.log(` ${fmt(r.rps)} req/s`);
    return r;
  } finally {
    await stopChild(child.child);
  }
}

/** Runs the service's REST workloads (login aside: it measures the hash) on each deployment, side by side. */
async function compareStores(deployments: Deployment[]): Promise<void> {
  setTempDir(mkdtempSync(path.join(tmpdir(), 'bds-bench-')));
  // Deadlocks counted while each deployment ran its workloads (PostgreSQL only; the target is 0).
  const columns: Array<{ d: Deployment; results: Measured[]; deadlocks?: number }> = [];
  let baseline: Measured | undefined;
  for (const d of deployments) {
    const deployed = await deploy(d, ROWS);
    try {
      if (d.store === 'sqlite') baseline = await measureBaseline(deployed);
      const plan = selected(workloads(deployed.ids, deployed.signedIn)).filter(
        (w) => w.target === 'service' && w.name !== 'login',
      );
      const results: Measured[] = [];
      const deadlocksBefore = d.store === 'postgres' ? await postgresDeadlocks() : undefined;
      for (const w of plan) {
        process.stdout.write(`bench: ${d.label}: ${w.name}...`);
        const r = await measure(deployed.origins, w, deployed.children);
        console.log(` ${fmt(r.rps)} req/s`);
        results.push(r);
      }
      const deadlocks =
        deadlocksBefore === undefined ? undefined : (await postgresDeadlocks()) - deadlocksBefore;
      columns.push({ d, results, deadlocks });
    } finally {
      await deployed.stop();
    }
  }
  const names = columns[0]?.results.map((r) => r.workload.name) ?? [];
  const header = ['workload', ...columns.flatMap(({ d }) => [`${d.label} req/s`, 'p99 ms'])];
  const pg1 = columns.find(({ d }) => d.store === 'postgres' && d.instances === 1);
  const pg2 = columns.find(({ d }) => d.store === 'postgres' && d.instances > 1);
  if (pg1 && pg2) header.push(`${pg2.d.instances} instances ÷ 1`);
  const rows = [header];
  for (const name of names) {
    const cell = (c: { results: Measured[] } | undefined) => c?.results.find((r) => r.workload.name === name);
    const row = [name, ...columns.flatMap((c) => [fmt(cell(c)!.rps), fmt(cell(c)!.p99, 2)])];
    if (pg1 && pg2) row.push(`${fmt(cell(pg2)!.rps / cell(pg1)!.rps, 2)} ×`);
    rows.push(row);
  }
  console.log('');
  console.log(
    `node ${process.version}, ${cpus().length} cpus, ${fmt(ROWS)} rows, ${CONNECTIONS} connections, ${DURATION} s per workload (+${WARMUP} s warmup)`,
  );
  console.log('');
  console.log(table(rows));
  for (const { d, deadlocks } of columns) {
    if (deadlocks !== undefined) {
      console.log(
        `${d.label}: ${fmt(deadlocks)} deadlocks in the database during its workloads (pg_stat_database; target 0)`,
      );
    }
  }
  if (baseline) {
    console.log(`\nbare baseline get-by-id in this run (on the SQLite data): ${fmt(baseline.rps)} req/s.`);
  }
  console.log('For ratios to the incumbent, measured beside it in one run: npm run bench -- --vs-incumbent');
  cleanupSync();
}

cleanupOnExit();
const subcommand = process.argv[2];
const failed = (err: unknown) => {
  console.error('\nbench failed:', err instanceof Error ? err.message : err);
  cleanupSync();
  process.exit(1);
};

// Subcommands first: `geo` takes `--store` too.
if (subcommand === 'console') {
  // `npm run bench -- console`: the console's browser budget (bench/console.ts).
  await import('./console.ts');
} else if (subcommand === 'vector-search') {
  // `npm run bench -- vector-search`: exact top-10 over 100,000 vectors of 384 dimensions (bench/vector.ts).
  await import('./vector.ts');
} else if (subcommand === 'acl-layouts') {
  // `npm run bench -- acl-layouts`: the read ACL's storage on SQLite, measured (bench/acl-layouts.ts).
  (await import('./acl-layouts.ts')).main();
} else if (subcommand === 'geo') {
  // `npm run bench -- geo [--store sqlite|postgres|all]`: geo operators on 20,000 GeoPoints (bench/geo.ts).
  await import('./geo.ts');
} else if (subcommand === 'live') {
  // `npm run bench -- live`: realtime fan-out, 10,000 subscriptions and the worst case (bench/live.ts).
  await import('./live.ts');
} else if (subcommand === 'push') {
  // `npm run bench -- push`: one push to 100,000 installations against local fake providers (bench/push.ts).
  await import('./push.ts');
} else if (process.argv.includes('--vs-incumbent')) {
  // `npm run bench -- --vs-incumbent [--store sqlite|postgres|all]`: beside the incumbent (bench/vs-incumbent.ts).
  (await import('./vs-incumbent.ts')).main().catch(failed);
} else {
  const deployments = storeArguments([
    { label: 'SQLite', store: 'sqlite', instances: 1 },
    { label: 'PostgreSQL', store: 'postgres', instances: 1 },
    { label: 'PostgreSQL x2', store: 'postgres', instances: 2 },
  ]);
  (deployments ? compareStores(deployments) : main()).catch(failed);
}
