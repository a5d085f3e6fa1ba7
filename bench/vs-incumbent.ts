/**
 * `npm run bench -- --vs-incumbent [--store sqlite|postgres|all]`: every REST workload of the bench
 * against the service and the incumbent (`parse-server` on the local PostgreSQL, bench/incumbent.ts)
 * in one sitting. Both are seeded with the same rows; before anything is timed, both are asked every
 * workload's request and must answer alike (same rows, same counts), or the run fails. Then rounds
 * alternate the order (round 1: service then incumbent, round 2: incumbent then service, ...), each
 * workload measured on every side back to back, and the rows a round created are removed from every
 * side before the next. Every figure printed is from this run, with the machine's load beside it.
 *
 * Environment, besides the bench's (bench/measure.ts, BENCH_ONLY): BENCH_ROWS (rows of the bench
 * class, default 20,000), BENCH_ROUNDS (default 2), BENCH_DATABASE_URL (the PostgreSQL server; the
 * incumbent gets the database `bds_bench_incumbent` on it, made afresh and dropped at the end).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { seeded } from '../server/test/helpers/seeded.ts';
import { cleanupSync, getTempDir, setTempDir, startChild, stopChild } from './children.ts';
import {
  BENCH_CLASS,
  BENCH_KEYS,
  DATABASE_URL,
  freshPostgresDatabase,
  MOUNT_PATH,
  numberFromEnv,
  PRIVATE_CLASS,
  PRIVATE_ROWS,
  type SignedIn,
} from './common.ts';
import { type Deployment, deploy, storeArguments } from './deploy.ts';
import {
  busyPercent,
  CONNECTIONS,
  DURATION,
  fmt,
  type Measured,
  machineTicks,
  measure,
  table,
  WARMUP,
} from './measure.ts';
import { ask, type HeaderPrefix, selected, type Workload, workloads } from './workloads.ts';

export const INCUMBENT_DATABASE = 'bds_bench_incumbent';

/** One target of the comparison: a deployment of the service, or the incumbent. */
export interface Side {
  label: string;
  origin: string;
  /** A deployment of several instances: each one's, and the load goes to all. */
  origins?: string[];
  prefix: HeaderPrefix;
  ids: string[];
  signedIn: SignedIn;
  children: ChildProcess[];
  stop(): Promise<void>;
}

/** Deploys the service (bench/deploy.ts) and describes it as a side. */
export async function startService(
  d: Deployment,
  rows: number,
  env: Record<string, string> = {},
): Promise<Side> {
  const deployed = await deploy(d, rows, { BENCH_HASH_PROBE: '0', ...env });
  if (!deployed.signedIn) {
    await deployed.stop();
    throw new Error(`${d.label}: the service child reported no signed-in reader`);
  }
  return { ...deployed, label: d.label, prefix: 'X-Backend-', signedIn: deployed.signedIn };
}

/** Starts the incumbent on a fresh database `database` of the PostgreSQL server, seeded with `rows` rows. */
export async function startIncumbent(rows: number, database = INCUMBENT_DATABASE): Promise<Side> {
  const tempDir = getTempDir();
  if (!tempDir) throw new Error('startIncumbent: the run has no temp dir');
  const db = await freshPostgresDatabase(database);
  try {
    console.log(`bench: incumbent: seeding ${fmt(rows)} rows through its REST API...`);
    const started = await startChild(
      'incumbent.ts',
      { BENCH_INCUMBENT_DATABASE_URI: db.uri, BENCH_TEMP_DIR: tempDir, BENCH_ROWS: String(rows) },
      900_000,
    );
    const { url, ids, signedIn } = started.message;
    if (!ids || ids.length !== rows || !signedIn) {
      await stopChild(started.child);
      throw new Error(`the incumbent reported ${ids?.length ?? 0} ids, expected ${rows}`);
    }
    return {
      label: 'incumbent',
      origin: new URL(url).origin,
      prefix: 'X-Parse-',
      ids,
      signedIn,
      children: [started.child],
      async stop() {
        await stopChild(started.child);
        await db.drop().catch(() => undefined);
      },
    };
  } catch (err) {
    await db.drop().catch(() => undefined);
    throw err;
  }
}

/** The workloads of the comparison for one side: the service's REST workloads (BENCH_ONLY applies). */
function planFor(side: Side, random?: () => number): Workload[] {
  return selected(workloads(side.ids, side.signedIn, random)).filter((w) => w.target === 'service');
}

/**
 * Asks every side each workload's request, drawn alike (the i-th id, the same range, the same
 * values), and throws naming every workload whose answers differ between sides or are wrong.
 */
export async function verifySameAnswers(sides: Side[], seed = 17): Promise<void> {
  const plans = sides.map((side) => planFor(side, seeded(seed)));
  const problems: string[] = [];
  for (let i = 0; i < plans[0]!.length; i++) {
    const answers: string[] = [];
    for (const [s, side] of sides.entries()) {
      const w = plans[s]![i]!;
      const { status, json, text } = await ask(side.origin, w, side.prefix);
      if (!w.check(status, json))
        problems.push(`${w.name}: ${side.label} answered ${status} ${text.slice(0, 200)}`);
      answers.push(JSON.stringify(w.answer(status, json)));
    }
    if (answers.some((a) => a !== answers[0])) {
      const name = plans[0]![i]!.name;
      const each = sides.map((side, s) => `${side.label}: ${answers[s]!.slice(0, 300)}`).join('; ');
      problems.push(`${name}: the answers differ (${each})`);
    }
  }
  if (problems.length > 0) {
    throw new Error(`the service and the incumbent do not answer alike:\n  ${problems.join('\n  ')}`);
  }
}

/** One REST call to a side with the master key. */
async function asMaster(side: Side, method: string, route: string, body?: unknown): Promise<any> {
  const res = await fetch(`${side.origin}${MOUNT_PATH}${route}`, {
    method,
    headers: {
      [`${side.prefix}Application-Id`]: BENCH_KEYS.appId,
      [`${side.prefix}Master-Key`]: BENCH_KEYS.masterKey,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (res.status >= 300)
    throw new Error(`${side.label}: ${method} ${route} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Deletes the rows created on a side since `since` (by the create workloads and their checks), so
 * every round reads the same rows on every side, whichever wrote faster.
 */
export async function removeRowsCreatedSince(side: Side, since: Date): Promise<number> {
  const where = encodeURIComponent(
    JSON.stringify({ createdAt: { $gte: { __type: 'Date', iso: since.toISOString() } } }),
  );
  let removed = 0;
  for (const className of [BENCH_CLASS, PRIVATE_CLASS]) {
    for (;;) {
      const { results } = await asMaster(
        side,
        'GET',
        `/classes/${className}?where=${where}&keys=objectId&limit=1000`,
      );
      if (results.length === 0) break;
      const ids: string[] = results.map((r: { objectId: string }) => r.objectId);
      const batches: string[][] = [];
      for (let i = 0; i < ids.length; i += 50) batches.push(ids.slice(i, i + 50));
      let next = 0;
      const worker = async () => {
        while (next < batches.length) {
          const batch = batches[next++]!;
          const answers: Array<{ error?: unknown }> = await asMaster(side, 'POST', '/batch', {
            requests: batch.map((id) => ({
              method: 'DELETE',
              path: `${MOUNT_PATH}/classes/${className}/${id}`,
            })),
          });
          const failed = answers.find((a) => a.error);
          if (failed)
            throw new Error(`${side.label}: removing created rows failed: ${JSON.stringify(failed.error)}`);
        }
      };
      await Promise.all(Array.from({ length: 4 }, worker));
      removed += ids.length;
    }
  }
  return removed;
}

// ---------------------------------------------------------------------------------------------
// The run

interface Figure {
  side: Side;
  round: number;
  result: Measured;
}

function incumbentVersion(): string {
  const entry = createRequire(import.meta.url).resolve('parse-server');
  const manifest = JSON.parse(readFileSync(path.resolve(path.dirname(entry), '..', 'package.json'), 'utf8'));
  return `parse-server ${manifest.version}`;
}

async function postgresVersion(): Promise<string> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query('SHOW server_version');
    return `PostgreSQL ${rows[0].server_version}`;
  } finally {
    await client.end();
  }
}

/** The machine before the run: load averages, and CPU busy % over a short sample. */
async function machineAtRest(): Promise<string> {
  const before = machineTicks();
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const busy = busyPercent(before, machineTicks());
  const [one, five, fifteen] = loadavg().map((l) => fmt(l, 2));
  return `load average ${one} ${five} ${fifteen} (1, 5, 15 min), CPU busy ${fmt(busy)} % over 2 s`;
}

/** The command that reproduces this run: the bench's settings from the environment, and the arguments. */
function command(): string {
  const settings = Object.entries(process.env)
    .filter(([name]) => name.startsWith('BENCH_'))
    .map(([name, value]) => `${name}=${value}`)
    .sort();
  return [...settings, 'npm run bench --', ...process.argv.slice(2)].join(' ');
}

export async function main(): Promise<void> {
  const rows = Math.round(numberFromEnv('BENCH_ROWS', 20_000, 1));
  const rounds = Math.round(numberFromEnv('BENCH_ROUNDS', 2, 1));
  const deployments = storeArguments([
    { label: 'SQLite', store: 'sqlite', instances: 1 },
    { label: 'PostgreSQL', store: 'postgres', instances: 1 },
  ]) ?? [{ label: 'SQLite', store: 'sqlite', instances: 1 }];
  const planSize = selected(workloads([])).filter((w) => w.target === 'service').length;
  const sideCount = deployments.length + 1;
  const budgetMs =
    1_800_000 + rounds * (planSize * sideCount * (DURATION + WARMUP + 30) * 1000 + sideCount * 120_000);
  const deadline = setTimeout(() => {
    console.error(`bench: not finished within ${budgetMs / 1000} s, stopping`);
    cleanupSync();
    process.exit(2);
  }, budgetMs);
  deadline.unref();

  const atRest = await machineAtRest();
  const versions = `${incumbentVersion()} on ${await postgresVersion()}`;
  setTempDir(mkdtempSync(path.join(tmpdir(), 'bds-bench-')));
  const sides: Side[] = [];
  try {
    for (const d of deployments) sides.push(await startService(d, rows));
    sides.push(await startIncumbent(rows));
    const services = sides.slice(0, -1);
    const incumbent = sides.at(-1)!;

    const since = new Date();
    process.stdout.write('bench: asking the service and the incumbent every workload once...');
    await verifySameAnswers(sides);
    console.log(' they answer alike');
    for (const side of sides) await removeRowsCreatedSince(side, since);

    const plans = new Map(sides.map((side) => [side, planFor(side)]));
    const figures: Figure[] = [];
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 === 1 ? sides : [...sides].reverse();
      for (let i = 0; i < planSize; i++) {
        process.stdout.write(`bench: round ${round}: ${plans.get(order[0]!)![i]!.name}:`);
        for (const side of order) {
          const result = await measure(
            side.origins ?? side.origin,
            plans.get(side)![i]!,
            side.children,
            side.prefix,
          );
          figures.push({ side, round, result });
          process.stdout.write(` ${side.label} ${fmt(result.rps)} req/s`);
        }
        console.log('');
      }
      process.stdout.write(`bench: round ${round}: removing the rows it created...`);
      const removed = await Promise.all(sides.map((side) => removeRowsCreatedSince(side, since)));
      console.log(` ${sides.map((side, s) => `${side.label} ${fmt(removed[s]!)}`).join(', ')}`);
    }
    report(figures, services, incumbent, rounds, { rows, atRest, versions });
  } finally {
    for (const side of sides.reverse()) await side.stop().catch(() => undefined);
    cleanupSync();
  }
}

function report(
  figures: Figure[],
  services: Side[],
  incumbent: Side,
  rounds: number,
  run: { rows: number; atRest: string; versions: string },
): void {
  const names = [...new Set(figures.map((f) => f.result.workload.name))];
  const figure = (side: Side, name: string, round: number) =>
    figures.find((f) => f.side === side && f.round === round && f.result.workload.name === name)!.result;
  const sides = [...services, incumbent];
  const ratio = (a: number, b: number) => `${fmt(a / b, a / b >= 10 ? 1 : 2)} ×`;

  const each = [
    [
      'workload',
      'round',
      ...sides.flatMap((s) => [`${s.label} req/s`, 'p99 ms', 'CPU busy %', 'load 1m']),
      ...services.map((s) => `${s.label} ÷ incumbent`),
    ],
  ];
  for (const name of names) {
    for (let round = 1; round <= rounds; round++) {
      const cells = sides.flatMap((s) => {
        const r = figure(s, name, round);
        return [fmt(r.rps), fmt(r.p99, 2), fmt(r.machineBusy), fmt(r.load1, 2)];
      });
      const ratios = services.map((s) =>
        ratio(figure(s, name, round).rps, figure(incumbent, name, round).rps),
      );
      each.push([name, String(round), ...cells, ...ratios]);
    }
  }

  const mean = (side: Side, name: string) => {
    let sum = 0;
    for (let round = 1; round <= rounds; round++) sum += figure(side, name, round).rps;
    return sum / rounds;
  };
  const summary = [
    [
      'workload',
      ...sides.map((s) => `${s.label} req/s (mean)`),
      ...services.flatMap((s) => [`${s.label} ÷ incumbent`, 'lowest round']),
    ],
  ];
  for (const name of names) {
    const lowest = (s: Side) => {
      let low = Number.POSITIVE_INFINITY;
      for (let round = 1; round <= rounds; round++) {
        low = Math.min(low, figure(s, name, round).rps / figure(incumbent, name, round).rps);
      }
      return `${fmt(low, low >= 10 ? 1 : 2)} ×`;
    };
    summary.push([
      name,
      ...sides.map((s) => fmt(mean(s, name))),
      ...services.flatMap((s) => [ratio(mean(s, name), mean(incumbent, name)), lowest(s)]),
    ]);
  }

  console.log('');
  console.log(`command: ${command()}`);
  console.log(
    `node ${process.version}, ${cpus().length} cpus; the incumbent: ${run.versions}; ${fmt(run.rows)} rows of ${BENCH_CLASS} ` +
      `and ${fmt(PRIVATE_ROWS)} of ${PRIVATE_CLASS} (half private through role:Readers or the owner, the caller a user in Readers); ` +
      `${CONNECTIONS} connections, ${DURATION} s per workload (+${WARMUP} s warmup), ${rounds} rounds, odd rounds service first, even rounds incumbent first`,
  );
  console.log(`machine before the run: ${run.atRest}`);
  console.log(
    'CPU busy %: the whole machine during that measurement (load generator and PostgreSQL included)',
  );
  console.log('');
  console.log(table(each));
  console.log('');
  console.log(table(summary));
  const failing = figures.filter((f) => f.result.errors > 0 || f.result.non2xx > 0);
  console.log('');
  if (failing.length === 0) console.log('errors or non-2xx answers: none');
  for (const f of failing) {
    console.log(
      `errors or non-2xx answers: ${f.side.label}, ${f.result.workload.name}, round ${f.round}: ${fmt(f.result.errors)} errors, ${fmt(f.result.non2xx)} non-2xx`,
    );
  }
}
