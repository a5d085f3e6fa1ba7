import { scrub } from '@bds/client/protocol';
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Marks a record whose every value was already made safe by its builder (the request line: known
 * fields, the free-text ones passed through `scrub()` one by one), so the formatter does not walk
 * it again. A symbol key: pino never writes it to the line.
 */
export const PRE_SCRUBBED: unique symbol = Symbol('bds.preScrubbed');

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
      formatters: {
        log: (record) =>
          (record as { [PRE_SCRUBBED]?: true })[PRE_SCRUBBED]
            ? record
            : (scrub(record) as Record<string, unknown>),
      },
    },
    // Buffered (4 kB) and asynchronous: one write per batch of lines, not one per request.
    destination ?? pino.destination({ fd: 1, sync: false, minLength: 4096 }),
  );
}

/** A logger that writes nothing (tests and embedders that bring their own). */
export const silentLogger = (): Logger => pino({ level: 'silent' });
