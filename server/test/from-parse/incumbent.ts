import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freshPostgresDatabase } from '../../../bench/common.ts';
import { KEYS } from '../helpers/keys.ts';

const INCUMBENT_POSTGRES = 'postgres://postgres@127.0.0.1:5432/test';

/** The incumbent runs with the test service's keys, so the same SDK set-up talks to both. */
export const INCUMBENT_KEYS = {
  appId: KEYS.appId,
  masterKey: KEYS.masterKey,
  javascriptKey: KEYS.javascriptKey,
  restAPIKey: KEYS.restAPIKey,
};

/** Why the incumbent cannot be started here, or undefined when it can. */
export async function incumbentUnavailable(): Promise<string | undefined> {
  try {
    createRequire(import.meta.url).resolve('parse-server');
  } catch {
    return 'the parse-server devDependency is not installed';
  }
  const client = new pg.Client({ connectionString: INCUMBENT_POSTGRES, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
  } catch (err) {
    return `no PostgreSQL at 127.0.0.1:5432 for the incumbent (${(err as Error).message})`;
  }
  return undefined;
}

export interface Incumbent {
  url: string;
  /** postgres://… of its own database (the --parse-postgres source). */
  databaseURI: string;
  stop(): Promise<void>;
}

/** parse-server in a child process, on a fresh database of the local PostgreSQL. */
export async function startIncumbent(): Promise<Incumbent> {
  const db = await freshPostgresDatabase(`bds_incumbent_${randomBytes(4).toString('hex')}`);
  const tempDir = mkdtempSync(path.join(tmpdir(), 'bds-incumbent-'));
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'incumbent-child.ts');
  const child: ChildProcess = fork(script, [], {
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      INCUMBENT_DATABASE_URI: db.uri,
      INCUMBENT_KEYS: JSON.stringify(INCUMBENT_KEYS),
      INCUMBENT_TEMP_DIR: tempDir,
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await db.drop().catch(() => undefined);
    rmSync(tempDir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.once('message', (m: { url?: string; error?: string }) =>
        m.url ? resolve(m.url) : reject(new Error(`the incumbent failed to start: ${m.error}`)),
      );
      child.once('exit', (code) =>
        reject(new Error(`the incumbent exited with ${code} before it was ready`)),
      );
    });
    return { url, databaseURI: db.uri, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
