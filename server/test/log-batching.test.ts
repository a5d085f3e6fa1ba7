import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchedLines, LOG_BATCH_MS } from '../src/kernel/log.ts';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'log-child.ts');

/** Records what BatchedLines hands over. */
function recordingSink() {
  const writes: string[] = [];
  const calls: string[] = [];
  return {
    writes,
    calls,
    write: (text: string) => writes.push(text),
    flush: (cb?: (err?: Error) => void) => {
      calls.push('flush');
      cb?.();
    },
    flushSync: () => calls.push('flushSync'),
  };
}

describe('log lines are written in batches', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('hands the lines of one interval over in one write, once the interval ends', () => {
    vi.useFakeTimers();
    const sink = recordingSink();
    const lines = new BatchedLines(sink);
    lines.write('{"a":1}\n');
    lines.write('{"b":2}\n');
    vi.advanceTimersByTime(LOG_BATCH_MS - 1);
    expect(sink.writes).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(sink.writes).toEqual(['{"a":1}\n{"b":2}\n']);
    // The next line starts a new interval.
    lines.write('{"c":3}\n');
    vi.advanceTimersByTime(LOG_BATCH_MS);
    expect(sink.writes).toEqual(['{"a":1}\n{"b":2}\n', '{"c":3}\n']);
  });

  it('writes at once when 64 kB of lines are pending', () => {
    vi.useFakeTimers();
    const sink = recordingSink();
    const lines = new BatchedLines(sink);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 63; i++) lines.write(line);
    expect(sink.writes).toEqual([]);
    lines.write(line);
    expect(sink.writes).toEqual([line.repeat(64)]);
    vi.advanceTimersByTime(LOG_BATCH_MS);
    expect(sink.writes).toHaveLength(1);
  });

  it('flush and flushSync hand the pending lines over before flushing the sink', () => {
    const sink = recordingSink();
    const lines = new BatchedLines(sink);
    lines.write('one\n');
    let flushed = false;
    lines.flush(() => {
      flushed = true;
    });
    expect(sink.writes).toEqual(['one\n']);
    expect(sink.calls).toEqual(['flush']);
    expect(flushed).toBe(true);
    lines.write('two\n');
    lines.flushSync();
    expect(sink.writes).toEqual(['one\n', 'two\n']);
    expect(sink.calls).toEqual(['flush', 'flushSync']);
    // Nothing pending: the timer of the second line was cleared, no empty write follows.
    lines.flush();
    expect(sink.writes).toHaveLength(2);
  });
});

describe('the default log destination', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
    child = undefined;
  });

  function run(mode: 'idle' | 'exit') {
    child = spawn(process.execPath, ['--import', 'tsx', CHILD, mode], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));
    return { output: () => out, exited };
  }

  it('writes a line on a quiet process without waiting for more lines or for the exit', async () => {
    const { output } = run('idle');
    // The child stays alive for 20 s; the line is due after 50 ms (bounds generous for a busy machine).
    const deadline = Date.now() + 15_000;
    while (!output().includes('\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const line = JSON.parse(output().split('\n')[0]!);
    expect(line).toMatchObject({ level: 30, name: 'bds', mode: 'idle', msg: 'one line' });
    expect(child!.exitCode).toBe(null);
  }, 30_000);

  it('writes the pending line when the process exits at once', async () => {
    const { output, exited } = run('exit');
    expect(await exited).toBe(0);
    const line = JSON.parse(output().split('\n')[0]!);
    expect(line).toMatchObject({ level: 30, name: 'bds', mode: 'exit', msg: 'one line' });
  }, 30_000);
});
