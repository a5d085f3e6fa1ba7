import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The workspace root (cwd of `npm run server`). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CLI = 'server/src/cli.ts';

export const CHILD_KEYS = {
  appId: 'child-app',
  masterKey: 'child-master-key-0123456789',
  restAPIKey: 'child-rest-key',
};

/** Env for a child with fixed keys (so no development keys are generated). */
export function keyEnv(keys: { appId: string; masterKey: string; restAPIKey?: string } = CHILD_KEYS) {
  return {
    BDS_APP_ID: keys.appId,
    BDS_MASTER_KEY: keys.masterKey,
    ...(keys.restAPIKey ? { BDS_REST_API_KEY: keys.restAPIKey } : {}),
  };
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CliChild {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Settles when the process has exited. */
  exited: Promise<ChildResult>;
}

export interface RunningChild extends CliChild {
  /** e.g. http://localhost:4711/api (as printed). */
  url: string;
  /** The same address with 127.0.0.1 (the service listens on IPv4 by default). */
  base: string;
  port: number;
}

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

export function tempDir(prefix = 'bds-cli-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** Env of the test process without anything that would configure the child by accident. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('BDS_') || k === 'PORT' || k === 'NODE_ENV' || k.startsWith('VITEST')) continue;
    env[k] = v;
  }
  return env;
}

/** Spawns `node --import tsx server/src/cli.ts` (what `npm run server` runs) from the workspace root. */
export function spawnCli(env: Record<string, string>, args: string[] = []): CliChild {
  const proc = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<ChildResult>((resolve) => {
    proc.once('exit', (code, signal) => {
      children.delete(proc);
      resolve({ code, signal });
    });
  });
  return { proc, stdout: () => out, stderr: () => err, exited };
}

const LISTENING = /service listening at (http:\/\/localhost:(\d+)(\/[^\s]*)?)/;

/** Spawns the CLI and waits until it prints its address. */
export async function startCli(
  env: Record<string, string>,
  args: string[] = [],
  timeoutMs = 15_000,
): Promise<RunningChild> {
  const child = spawnCli({ PORT: '0', ...env }, args);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`the service did not start in ${timeoutMs} ms\n${child.stdout()}\n${child.stderr()}`));
    }, timeoutMs);
    const onData = () => {
      const m = LISTENING.exec(child.stdout());
      if (m) {
        cleanup();
        resolve(m[1]!);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(
        new Error(`the service exited (${code}) before listening\n${child.stdout()}\n${child.stderr()}`),
      );
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.proc.stdout!.off('data', onData);
      child.proc.off('exit', onExit);
    };
    child.proc.stdout!.on('data', onData);
    child.proc.once('exit', onExit);
    onData();
  });
  const port = Number(new URL(url).port);
  return { ...child, url, base: url.replace('//localhost:', '//127.0.0.1:'), port };
}

/** Waits for the exit, killing the child with SIGKILL if it takes longer than `timeoutMs`. */
export async function waitExit(child: CliChild, timeoutMs = 30_000): Promise<ChildResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const result = await Promise.race([child.exited, timeout]);
  clearTimeout(timer);
  if (result === 'timeout') {
    child.proc.kill('SIGKILL');
    throw new Error(`the process did not exit in ${timeoutMs} ms\n${child.stdout()}\n${child.stderr()}`);
  }
  return result;
}

/** Kills every child still running (SIGKILL) and waits for them; for afterEach/afterAll. */
export async function killChildren(): Promise<void> {
  const running = [...children];
  await Promise.all(
    running.map(
      (proc) =>
        new Promise<void>((resolve) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
          proc.once('exit', () => resolve());
          proc.kill('SIGKILL');
        }),
    ),
  );
  children.clear();
}

/** Removes the temporary directories made by tempDir(). */
export function removeTempDirs(): void {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

export interface HttpAnswer {
  status: number;
  json: any;
  text: string;
  headers: Headers;
}

/** A JSON request to a child's service. `headers` are sent as given (no default credentials). */
export async function call(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<HttpAnswer> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

export function masterHeaders(keys: { appId: string; masterKey: string } = CHILD_KEYS) {
  return { 'X-Backend-Application-Id': keys.appId, 'X-Backend-Master-Key': keys.masterKey };
}

export function restHeaders(keys: { appId: string; restAPIKey?: string } = CHILD_KEYS) {
  return { 'X-Backend-Application-Id': keys.appId, 'X-Backend-REST-API-Key': keys.restAPIKey ?? '' };
}
