import { format } from 'node:util';
import { scrub } from '@bds/client/protocol';
import { traceScope } from '../kernel/trace.ts';

const LEVELS = { log: 'info', info: 'info', debug: 'debug', warn: 'warn', error: 'error' } as const;

let captured = false;

/**
 * What cloud code writes with `console` while it serves a request goes where it always goes, and is
 * kept as a line of that request (GET /logs/<requestId>) when the service keeps lines; both get it
 * scrubbed as the request's scope says (the secret keys, and the app's keys as values). Outside a
 * handler serving a request (traceScope), console calls are untouched. Installed once per process,
 * by the first service.
 */
export function captureConsole(): void {
  if (captured) return;
  captured = true;
  for (const [method, level] of Object.entries(LEVELS) as Array<
    [keyof typeof LEVELS, (typeof LEVELS)[keyof typeof LEVELS]]
  >) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      const scope = traceScope.getStore();
      if (!scope) {
        original(...args);
        return;
      }
      // The process's output gets the line as kept: a secret cloud code logs by mistake reaches
      // neither.
      const text = scope.redact(format(...args.map((arg) => scrub(arg))));
      scope.sink?.keep({ requestId: scope.requestId, kind: 'cloud', level, text });
      original(text);
    };
  }
}
