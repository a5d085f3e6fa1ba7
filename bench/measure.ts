/**
 * One measured run of a workload against a target with autocannon, the bench's settings from the
 * environment, the machine's load during a run, and the report tables.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { type ChildMessage, numberFromEnv, Samples } from './common.ts';
import { check, type HeaderPrefix, headersFor, type Workload } from './workloads.ts';

export const DURATION = numberFromEnv('BENCH_DURATION', 5, 1);
export const CONNECTIONS = Math.round(numberFromEnv('BENCH_CONNECTIONS', 32, 1));
export const WARMUP = numberFromEnv('BENCH_WARMUP', 1, 0);

export interface Measured {
  workload: Workload;
  /** CPU time the target process spent per request, in microseconds. */
  cpuPerRequest: number;
  /** Time the target's event loop (main thread) was busy per request, in microseconds. */
  loopPerRequest: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
  /** The whole machine during the run (warmup included): CPU busy %, from /proc/stat. */
  machineBusy: number;
  /** The machine's 1-minute load average at the end of the run. */
  load1: number;
}

/** The CPU time a child has used so far, and its event loop's busy time, in microseconds. */
function cpuOf(child: ChildProcess): Promise<{ micros: number; loopMicros: number }> {
  return new Promise((resolve) => {
    const onMessage = (message: ChildMessage) => {
      if (message.type !== 'cpu') return;
      child.off('message', onMessage);
      resolve(message);
    };
    child.on('message', onMessage);
    child.send({ type: 'cpu' });
  });
}

/** The CPU time of several children together (the instances of a deployment). */
async function cpuOfAll(children: ChildProcess[]): Promise<{ micros: number; loopMicros: number }> {
  const all = await Promise.all(children.map(cpuOf));
  return {
    micros: all.reduce((sum, c) => sum + c.micros, 0),
    loopMicros: all.reduce((sum, c) => sum + c.loopMicros, 0),
  };
}

/** The machine's CPU counters (all cores, in clock ticks): busy and total. */
export function machineTicks(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal (guest time is counted in user already)
    const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = ticks.reduce((sum, t) => sum + t, 0);
    const idle = ticks[3]! + ticks[4]!;
    return { busy: total - idle, total };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

/** CPU busy % of the whole machine between two readings of `machineTicks`. */
export function busyPercent(before: { busy: number; total: number }, after: { busy: number; total: number }) {
  const total = after.total - before.total;
  return total > 0 ? ((after.busy - before.busy) / total) * 100 : Number.NaN;
}

export function load1(): number {
  return loadavg()[0]!;
}

/** `target`: an origin, or the origins of several instances, over which the connections are spread. */
export async function measure(
  target: string | string[],
  w: Workload,
  child: ChildProcess | ChildProcess[],
  prefix: HeaderPrefix = 'X-Backend-',
): Promise<Measured> {
  const children = Array.isArray(child) ? child : [child];
  const origins = Array.isArray(target) ? target : [target];
  for (const origin of origins) await check(origin, w, prefix);
  const instance = autocannon({
    url: origins.length === 1 ? origins[0]! : origins,
    connections: CONNECTIONS,
    duration: DURATION,
    pipelining: 1,
    timeout: 10,
    method: w.method,
    headers: headersFor(w, prefix),
    ...(WARMUP > 0 ? { warmup: { connections: CONNECTIONS, duration: WARMUP } } : {}),
    requests: [
      {
        setupRequest: (req) => {
          req.path = w.path();
          if (w.body) req.body = w.body();
          return req;
        },
      },
    ],
  });
  // Emitted for the measured run only (the warmup reports on its own emitter).
  const latencies = new Samples();
  instance.on('response', (_client, _status, _bytes, responseTime) => latencies.add(responseTime as number));
  // autocannon ends on its own after the duration; this bounds a stuck run.
  const bound = setTimeout(() => instance.stop(), (WARMUP + DURATION + 30) * 1000);
  const ticksBefore = machineTicks();
  // Counted from the warmup's end would be exact; from its start is close enough and biased against us.
  const cpuBefore = await cpuOfAll(children);
  try {
    const r = await instance;
    const cpuAfter = await cpuOfAll(children);
    const machineBusy = busyPercent(ticksBefore, machineTicks());
    const [p50, p99] = latencies.percentiles(0.5, 0.99);
    const requests = Math.max(1, r.requests.total + (WARMUP > 0 ? r.requests.average * WARMUP : 0));
    return {
      workload: w,
      cpuPerRequest: (cpuAfter.micros - cpuBefore.micros) / requests,
      loopPerRequest: (cpuAfter.loopMicros - cpuBefore.loopMicros) / requests,
      rps: r.requests.average,
      p50: p50!,
      p99: p99!,
      errors: r.errors,
      non2xx: r.non2xx,
      total: r.requests.total,
      machineBusy,
      load1: load1(),
    };
  } finally {
    clearTimeout(bound);
  }
}

// ---------------------------------------------------------------------------------------------
// Report

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const [head, ...body] = rows;
  return [line(head!), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
