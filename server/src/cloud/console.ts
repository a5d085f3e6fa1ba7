import { format } from 'node:util';
import { scrub } from '@bds/client/protocol';
import { traceScope } from '../kernel/trace.ts';

const LEVELS = { log: 'info', info: 'info', debug: 'debug', warn: 'warn', error: 'error' } as const;

let captured = false;

/**
 * What cloud code writes with `console` while it serves a request is also kept as a line of that
 * request (GET /logs/<requestId>), besides going where it always goes. Outside a handler serving a
 * request (traceScope), console calls are untouched. Installed once per process, by the first
 * service that keeps lines.
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
      if (scope?.sink)
        scope.sink.keep({
          requestId: scope.requestId,
          kind: 'cloud',
          level,
          text: format(...args.map((arg) => scrub(arg))),
        });
      original(...args);
    };
  }
}
