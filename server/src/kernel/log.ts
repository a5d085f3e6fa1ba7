import { scrub } from '@bds/client/protocol';
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The service's structured log (pino, one JSON object per line). Every record passes through the
 * protocol's `scrub()` (docs/protocol.md#log-scrubbing: secret keys, key headers, long
 * numeric arrays), so a value under a secret key never reaches a line whoever logs it.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { name: 'bds' },
      formatters: { log: (record) => scrub(record) as Record<string, unknown> },
    },
    destination ?? new BatchedLines(pino.destination({ fd: 1, sync: false, minLength: 0 })),
  );
}

/** Longest a line waits before it is written. */
export const LOG_BATCH_MS = 50;
/** Pending text that is written at once, without waiting for the timer. */
const LOG_BATCH_CHARS = 64 * 1024;

/** What BatchedLines needs of pino's destination (a SonicBoom). */
interface LineSink {
  write(text: string): unknown;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
}

/**
 * Log lines gathered for at most LOG_BATCH_MS (or LOG_BATCH_CHARS), then handed to pino's
 * asynchronous destination in one write. Under load that is one write for hundreds of request
 * lines rather than one per 4 kB: the writes and SonicBoom's byte counting, which walks its whole
 * pending buffer on every line, took 4.3 µs of each get-by-id in a profile of `npm run bench`, and
 * 1.2 µs batched. On a quiet service a line still appears within LOG_BATCH_MS (a size threshold
 * alone kept it back until 4 kB of others arrived). The timer keeps the process alive until the
 * lines are out, and a process that exits first writes them synchronously.
 */
export class BatchedLines implements DestinationStream {
  private pending = '';
  private timer: NodeJS.Timeout | undefined;
  private readonly ref = new WeakRef(this);

  constructor(private readonly sink: LineSink) {
    if (batchedAtExit.size >= 64) {
      for (const ref of batchedAtExit) if (ref.deref() === undefined) batchedAtExit.delete(ref);
    }
    batchedAtExit.add(this.ref);
    if (!exitHooked) {
      exitHooked = true;
      process.once('exit', writeAllAtExit);
    }
  }

  write(line: string): void {
    this.pending += line;
    if (this.pending.length >= LOG_BATCH_CHARS) this.handOver();
    else this.timer ??= setTimeout(() => this.handOver(), LOG_BATCH_MS);
  }

  /** pino's `logger.flush(cb)`: the pending lines are handed over and the sink flushed. */
  flush(cb?: (err?: Error) => void): void {
    this.handOver();
    this.sink.flush(cb);
  }

  /** Writes everything now, synchronously (process exit). */
  flushSync(): void {
    this.handOver();
    this.sink.flushSync();
  }

  private handOver(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.sink.write(text);
  }
}

/** Destinations whose lines a process exit must not lose (weakly held: loggers come and go in tests). */
const batchedAtExit = new Set<WeakRef<BatchedLines>>();
let exitHooked = false;

function writeAllAtExit(): void {
  for (const ref of batchedAtExit) {
    try {
      ref.deref()?.flushSync();
    } catch {
      // A destination that cannot write any more (closed, not open yet) has nothing to save.
    }
  }
  batchedAtExit.clear();
  exitHooked = false;
}

/** A logger that writes nothing (tests and embedders that bring their own). */
export const silentLogger = (): Logger => pino({ level: 'silent' });

/** What the one line per request says (http/app.ts). */
export interface RequestLine {
  method: string | undefined;
  /** The path without its query string. */
  path: string;
  status: number;
  code: number | undefined;
  ms: number;
  caller: string | undefined;
  user: string | undefined;
  /** The request's trace id (kernel/trace.ts: letters, digits and `._:-` only). */
  requestId?: string;
  /** When it was answered (ms since the epoch); now when absent. */
  at?: number;
}

const quoted = (value: string) => JSON.stringify(String(scrub(value)));

/**
 * Writes the request line to the logger's own stream, in pino's format (`level`, `time`, the
 * logger's bindings, the fields, `msg`), at level info. It bypasses pino's generic serializer,
 * which costs about 3 µs a line (a tenth of a primary-key read's whole budget), for a record whose
 * fields are known: numbers, a method token Node's parser checked, the caller kind, and two free-text
 * values passed through `scrub()` here.
 */
export function writeRequestLine(log: Logger, line: RequestLine): void {
  if (!log.isLevelEnabled('info')) return;
  const bindings = (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  let text = `{"level":${log.levels.values.info},"time":${line.at ?? Date.now()}${bindings}`;
  if (line.method !== undefined) text += `,"method":${quoted(line.method)}`;
  text += `,"path":${quoted(line.path)},"status":${line.status}`;
  if (line.code !== undefined) text += `,"code":${line.code}`;
  text += `,"ms":${line.ms}`;
  if (line.caller !== undefined) text += `,"caller":${quoted(line.caller)}`;
  if (line.user !== undefined) text += `,"user":${quoted(line.user)}`;
  if (line.requestId !== undefined) text += `,"requestId":"${line.requestId}"`;
  const stream = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  stream?.write(`${text},"msg":"request"}\n`);
}
