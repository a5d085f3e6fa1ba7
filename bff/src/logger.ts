import { FILTERED, scrub } from '@bds/client/protocol';
import type { Request, RequestHandler } from 'express';
import pino, { type DestinationStream, type Logger } from 'pino';
import type { ConsoleUser } from './context.ts';

/**
 * A pino logger whose every record goes through the client library's `scrub()` and whose every
 * written line has the configured secrets replaced: a key never reaches a log line.
 */
export function createLogger(secrets: string[], level: string, destination?: DestinationStream): Logger {
  const values = secrets.filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  const variants = new Set<string>();
  for (const s of values) {
    variants.add(s);
    variants.add(JSON.stringify(s).slice(1, -1));
    variants.add(encodeURIComponent(s));
  }
  const redact = (line: string) => {
    let out = line;
    for (const v of variants) if (out.includes(v)) out = out.split(v).join(FILTERED);
    return out;
  };
  return pino(
    {
      level,
      base: { name: 'bds-console' },
      formatters: { log: (obj) => scrub(obj) as Record<string, unknown> },
      hooks: { streamWrite: redact },
    },
    destination ?? pino.destination(1),
  );
}

/** One line per request: console user, method, route, status, duration. */
export function requestLogger(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const user = (req as Request & { consoleUser?: ConsoleUser }).consoleUser;
      const path = req.originalUrl.split('?')[0];
      const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : path;
      logger.info(
        {
          user: user?.username ?? null,
          method: req.method,
          route,
          path,
          status: res.statusCode,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        },
        'request',
      );
    });
    next();
  };
}
