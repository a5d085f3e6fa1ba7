/**
 * `--store <sqlite|postgres|all> [--instances n]`: the service deployed on a store, seeded, with
 * several instances sharing Redis, the load spread over them by the load generator itself.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { getTempDir, startChild, stopChild } from './children.ts';
import { dropRedisPrefix, freshPostgresSchema, REDIS_URL, type SignedIn } from './common.ts';
import { fmt } from './measure.ts';

export interface Deployment {
  label: string;
  store: 'sqlite' | 'postgres';
  instances: number;
}

export interface Deployed {
  /** The first instance's (the one that seeded). */
  origin: string;
  /** Every instance's: the bench's load goes to all of them. */
  origins: string[];
  dataDir: string;
  children: ChildProcess[];
  ids: string[];
  signedIn?: SignedIn;
  stop(): Promise<void>;
}

/**
 * Starts the service instances of a deployment (the first seeds the store with `rows` rows of the
 * bench class). `env` goes to every instance.
 */
export async function deploy(
  d: Deployment,
  rows: number,
  env: Record<string, string> = {},
): Promise<Deployed> {
  const tempDir = getTempDir();
  if (!tempDir) throw new Error('deploy: the run has no temp dir');
  const instanceEnv: Record<string, string> = {
    ...env,
    BENCH_DATA_DIR: path.join(tempDir, `data-${d.label.replace(/\W+/g, '-')}`),
    BENCH_TEMP_DIR: tempDir,
    BENCH_ROWS: String(rows),
  };
  const cleanups: Array<() => Promise<void>> = [];
  if (d.store === 'postgres') {
    const schema = await freshPostgresSchema();
    cleanups.push(schema.drop);
    instanceEnv.BENCH_DATABASE_URI = schema.uri;
    if (d.instances > 1) {
      const prefix = `bds-bench-${process.pid}-${Date.now().toString(36)}:`;
      instanceEnv.BENCH_REDIS_URL = REDIS_URL;
      instanceEnv.BENCH_REDIS_PREFIX = prefix;
      cleanups.push(() => dropRedisPrefix(prefix));
    }
  }
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map((c) => stopChild(c)));
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  };
  try {
    console.log(`bench: ${d.label}: seeding ${fmt(rows)} rows...`);
    const first = await startChild('service.ts', instanceEnv, 900_000);
    children.push(first.child);
    const urls = [first.message.url];
    for (let i = 1; i < d.instances; i++) {
      const other = await startChild('service.ts', { ...instanceEnv, BENCH_SEED: '0' }, 60_000);
      children.push(other.child);
      urls.push(other.message.url);
    }
    return {
      origin: new URL(first.message.url).origin,
      // autocannon spreads its connections over them (a proxy in front cost a hop of its own on
      // every request, which a deployment's load balancer does not take from the instances' CPU).
      origins: urls.map((u) => new URL(u).origin),
      dataDir: instanceEnv.BENCH_DATA_DIR,
      children,
      ids: first.message.ids ?? [],
      signedIn: first.message.signedIn,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The value after `flag` on the command line, if given. */
export function argument(flag: string): string | undefined {
  const args = process.argv.slice(2);
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

/**
 * `--store <sqlite|postgres|all>` and `--instances <n>` from the command line, if `--store` is
 * given. `all` is what `all` stands for in the caller's comparison.
 */
export function storeArguments(all: Deployment[]): Deployment[] | undefined {
  const store = argument('--store');
  if (store === undefined) return undefined;
  const instances = Number(argument('--instances') ?? 1);
  if (!Number.isInteger(instances) || instances < 1 || instances > 8) {
    console.error('bench: --instances must be a whole number from 1 to 8');
    process.exit(1);
  }
  if (store === 'all') return all;
  if (store !== 'sqlite' && store !== 'postgres') {
    console.error('bench: --store must be sqlite, postgres or all');
    process.exit(1);
  }
  if (store === 'sqlite' && instances > 1) {
    console.error(
      'bench: several instances need --store postgres (the embedded store belongs to one process)',
    );
    process.exit(1);
  }
  const label = `${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}${instances > 1 ? ` x${instances}` : ''}`;
  return [{ label, store, instances }];
}
