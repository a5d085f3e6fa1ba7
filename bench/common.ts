import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { seeded } from '../server/test/helpers/seeded.ts';

/** Settings shared by the bench driver (run.ts) and its child processes (service.ts, baseline.ts). */

/** A number from the environment, or `fallback`; anything else than a number >= `min` stops the bench. */
export function numberFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) {
    console.error(`bench: ${name} must be a number >= ${min}, got "${raw}"`);
    process.exit(1);
  }
  return value;
}

export const BENCH_KEYS = {
  appId: 'bench-app',
  masterKey: 'bench-master-key-0123456789',
  restAPIKey: 'bench-rest-key',
};

export const BENCH_CLASS = 'BenchItem';
export const MOUNT_PATH = '/api';

/** `n` values of seeded and created rows are drawn from [0, N_RANGE). */
export const N_RANGE = 100_000;

/**
 * The signed-in workloads' class (issue 11's shape): rows where even rows are public-read and odd
 * rows are readable only by `role:Readers` and their owner; the caller is a user in Readers.
 */
export const PRIVATE_CLASS = 'PrivateItem';
/** Rows of the private class: 20,000; BENCH_PRIVATE_ROWS makes it smaller for the harness's own test. */
export const PRIVATE_ROWS = Math.round(numberFromEnv('BENCH_PRIVATE_ROWS', 20_000, 20));
export const READER = { username: 'bench-reader', password: 'bench-reader-password' };
/** The users who own the private rows, one after the other. */
export const OWNERS = 100;
/** How many ids of the private class (its first rows) the signed-in workloads pick from. */
export const SIGNED_IN_IDS = 1_000;

const TAGS = ['red', 'green', 'blue', 'cyan', 'magenta', 'yellow', 'black', 'white'];

/**
 * The rows of the bench class, in order. Drawn from a seeded generator, so the service and the
 * incumbent (bench/incumbent.ts) store the same values and answer the same finds and counts.
 */
export function* benchItemRows(count: number): Generator<{ n: number; name: string; tags: string[] }> {
  const random = seeded(1);
  for (let i = 0; i < count; i++) {
    yield {
      n: Math.floor(random() * N_RANGE),
      name: `item ${i}`,
      tags: [TAGS[i % TAGS.length]!, TAGS[(i * 7) % TAGS.length]!],
    };
  }
}

/**
 * The rows of the private class, in order (issue 11's shape): a `score` (no index), even rows
 * public-read, odd rows readable by role:Readers and their owner, `owners[i % owners.length]`.
 */
export function* privateItemRows(
  owners: string[],
): Generator<{ score: number; label: string; ACL: Record<string, { read?: boolean; write?: boolean }> }> {
  const random = seeded(2);
  for (let i = 0; i < PRIVATE_ROWS; i++) {
    const owner = owners[i % owners.length]!;
    yield {
      score: random() * PRIVATE_ROWS,
      label: `row ${i}`,
      ACL:
        i % 2 === 0
          ? { '*': { read: true } }
          : { 'role:Readers': { read: true }, [owner]: { read: true, write: true } },
    };
  }
}

/** What the signed-in workloads need from the service child. */
export interface SignedIn {
  sessionToken: string;
  /** The ids of the first SIGNED_IN_IDS rows of the private class, half of them private (role or owner only). */
  ids: string[];
  /**
   * Milliseconds one password hash takes (median of a few), for the login's share of the hash-only
   * limit. Only from the service, and not with BENCH_HASH_PROBE=0.
   */
  hashMs?: number;
  /** Hashes per second with one hash running per core (what the cores sustain together, measured). */
  parallelHashesPerSecond?: number;
}

/** Messages a child sends to the driver over the IPC channel. */
export type ChildMessage =
  | { type: 'ready'; url: string; seedMs?: number; ids?: string[]; signedIn?: SignedIn }
  | { type: 'cpu'; micros: number; loopMicros: number }
  | { type: 'error'; message: string };

/**
 * Exits the child on SIGTERM/SIGINT and when the driver goes away (its IPC channel closes, e.g. it
 * was killed), so no child outlives a run. `orphaned` tells `onExit` that the driver is gone.
 */
export function exitWithParent(onExit: (orphaned: boolean) => Promise<void> | void): void {
  // The driver asks for the CPU time used so far (user + system, microseconds; CPU per request is
  // steadier than requests per second on a shared machine), and for the time the event loop was
  // busy (the main thread alone, without the thread pool's work such as password hashing).
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'cpu') {
      const { user, system } = process.cpuUsage();
      const loopMicros = performance.eventLoopUtilization().active * 1000;
      send({ type: 'cpu', micros: user + system, loopMicros });
    }
  });
  let exiting = false;
  const stop = async (orphaned: boolean) => {
    if (exiting) return;
    exiting = true;
    const force = setTimeout(() => process.exit(0), 5_000);
    force.unref();
    try {
      await onExit(orphaned);
    } finally {
      process.exit(0);
    }
  };
  process.on('disconnect', () => void stop(true));
  process.on('SIGTERM', () => void stop(false));
  process.on('SIGINT', () => void stop(false));
}

export function send(message: ChildMessage): void {
  process.send?.(message);
}

/**
 * Every latency sample of a workload, in ms. Autocannon's own histogram keeps whole milliseconds
 * only, too coarse for sub-millisecond answers, so the benches keep every sample.
 */
export class Samples {
  private values = new Float64Array(1 << 16);
  size = 0;

  add(ms: number): void {
    if (this.size === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2);
      bigger.set(this.values);
      this.values = bigger;
    }
    this.values[this.size++] = ms;
  }

  percentiles(...ps: number[]): number[] {
    const sorted = this.values.slice(0, this.size).sort();
    return ps.map((p) =>
      this.size === 0 ? Number.NaN : sorted[Math.min(this.size - 1, Math.floor(p * this.size))]!,
    );
  }

  max(): number {
    let m = Number.NaN;
    for (let i = 0; i < this.size; i++) if (!(this.values[i]! <= m)) m = this.values[i]!;
    return m;
  }
}

// PostgreSQL and Redis for `--store postgres` and several instances (bench/run.ts, bench/live.ts).

export const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A fresh PostgreSQL schema for one deployment (the service connects with it as search_path). */
export async function freshPostgresSchema(): Promise<{ uri: string; drop(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const name = `bds_bench_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE SCHEMA "${name}"`);
  const uri = new URL(DATABASE_URL);
  uri.searchParams.set('options', `-c search_path=${name}`);
  return { uri: uri.toString(), drop: () => run(`DROP SCHEMA IF EXISTS "${name}" CASCADE`) };
}

/**
 * Deadlocks PostgreSQL has detected in the database of DATABASE_URL so far (pg_stat_database). The
 * counter is the whole database's: other work on the same server in the meantime counts too.
 */
export async function postgresDeadlocks(): Promise<number> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(rows[0]?.deadlocks ?? 0);
  } finally {
    await client.end();
  }
}

/**
 * A fresh PostgreSQL database `name` on the server of DATABASE_URL (dropped first if a killed run
 * left it), for the incumbent, which wants a database of its own.
 */
export async function freshPostgresDatabase(name: string): Promise<{ uri: string; drop(): Promise<void> }> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
  const { default: pg } = await import('pg');
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await run(`CREATE DATABASE "${name}"`);
  const uri = new URL(DATABASE_URL);
  uri.pathname = `/${name}`;
  return { uri: uri.toString(), drop: () => run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

/** Removes the keys a run left in Redis under its prefix. */
export async function dropRedisPrefix(prefix: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A CPU profile of this process from now until `stop()`, written as a .cpuprofile file into `dir`. */
export async function startProfiler(dir: string, name: string): Promise<{ stop(): Promise<void> }> {
  const session = new Session();
  session.connect();
  const post = (method: string) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, (err, result) => (err ? reject(err) : resolve(result))),
    );
  await post('Profiler.enable');
  await post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await post('Profiler.stop')) as { profile: unknown };
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `${name}-${Date.now()}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}
