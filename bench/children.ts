/**
 * The bench's child processes (the service, the baseline, the incumbent): each runs in
 * its own `node --import tsx` process, so the load generator never shares an event loop with a
 * server. Every child started here is tracked, so a failing or interrupted run kills them all.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildMessage } from './common.ts';

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(BENCH_DIR, '..');

const children = new Set<ChildProcess>();
/** The temporary folder of the run: children's logs and data; removed by `cleanupSync`. */
let tempDir: string | undefined;

export function setTempDir(dir: string): void {
  tempDir = dir;
}

export function getTempDir(): string | undefined {
  return tempDir;
}

export function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Kills every child still running and removes the run's temporary folder. */
export function cleanupSync(): void {
  for (const child of children) if (alive(child)) child.kill('SIGKILL');
  children.clear();
  if (tempDir) {
    rmSync(tempDir, { recursive: true, force: true });
    tempDir = undefined;
  }
}

/** For the bench's own process (not a test's): no child outlives it, on exit or on a signal. */
export function cleanupOnExit(): void {
  process.on('exit', cleanupSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      console.error(`\nbench: ${signal}, stopping`);
      cleanupSync();
      process.exit(130);
    });
  }
}

export interface Started {
  child: ChildProcess;
  message: Extract<ChildMessage, { type: 'ready' }>;
}

/** Starts `node --import tsx bench/<script>` and waits for its ready message. */
export function startChild(
  script: string,
  env: Record<string, string>,
  timeoutMs: number,
  nodeFlags: string[] = [],
): Promise<Started> {
  // The service writes its request log (one line per request, as in production) to a file in the
  // temp dir: passed through to this process's output, a terminal or pipe reading 20,000 lines a
  // second would compete with the service and the load generator for the same cores.
  const logFile = openSync(path.join(tempDir ?? tmpdir(), `${path.basename(script, '.ts')}.log`), 'a');
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', path.join(BENCH_DIR, script)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', logFile, 'inherit', 'ipc'],
  });
  closeSync(logFile);
  children.add(child);
  return new Promise((resolve, reject) => {
    const fail = (err: Error) => {
      clearTimeout(timer);
      if (alive(child)) child.kill('SIGKILL');
      reject(err);
    };
    const timer = setTimeout(
      () => fail(new Error(`${script} was not ready within ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.once('error', fail);
    child.once('exit', (code, signal) =>
      fail(new Error(`${script} exited early (code ${code}, signal ${signal})`)),
    );
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'error') fail(new Error(`${script} failed:\n${message.message}`));
      else if (message.type === 'ready') {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({ child, message });
      }
    });
  });
}

/** SIGTERM, then SIGKILL if the child has not exited within `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (!alive(child)) {
    children.delete(child);
    return;
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}
