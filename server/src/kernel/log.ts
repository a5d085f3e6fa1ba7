import { scrub } from '@bds/client/protocol';
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The service's structured log (pino, one JSON object per line). Every record passes through the
 * protocol's `scrub()` (SPEC "Secret handling in client logs": secret keys, key headers, long
 * numeric arrays), so a value under a secret key never reaches a line whoever logs it.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { name: 'bds' },
      formatters: { log: (record) => scrub(record) as Record<string, unknown> },
    },
    // Buffered (4 kB) and asynchronous: one write per batch of lines, not one per request.
    destination ?? pino.destination({ fd: 1, sync: false, minLength: 4096 }),
  );
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
  let text = `{"level":${log.levels.values.info},"time":${Date.now()}${bindings}`;
  if (line.method !== undefined) text += `,"method":${quoted(line.method)}`;
  text += `,"path":${quoted(line.path)},"status":${line.status}`;
  if (line.code !== undefined) text += `,"code":${line.code}`;
  text += `,"ms":${line.ms}`;
  if (line.caller !== undefined) text += `,"caller":${quoted(line.caller)}`;
  if (line.user !== undefined) text += `,"user":${quoted(line.user)}`;
  const stream = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  stream?.write(`${text},"msg":"request"}\n`);
}
