import { AsyncLocalStorage } from 'node:async_hooks';
import { FILTERED, scrub, TRACE_ID_PATTERN } from '@bds/client/protocol';
import { type TrustProxy, trustedPeer } from './client-address.ts';
import { newObjectId } from './ids.ts';

/**
 * A request's trace id (docs/protocol.md#request-ids): sent back as `X-Request-Id` on every answer,
 * written on its request log line and on the lines cloud code and webhooks write while serving it.
 * Not the idempotency request id (`X-Backend-Request-Id`), which the caller chooses for a write.
 */

/** Length of the ids the service makes (random, [A-Za-z0-9]). */
export const TRACE_ID_LENGTH = 16;

export const newTraceId = (): string => newObjectId(TRACE_ID_LENGTH);

/**
 * The rule for a request's trace id: the `X-Request-Id` a trusted proxy (option `trustProxy`) sent,
 * when it is one header of safe characters and bounded length; otherwise a new one. A client that
 * is not a trusted proxy cannot choose the id its request is logged under.
 */
export function traceIdOf(
  option: TrustProxy,
): (socketAddress: string | undefined, given: string | string[] | undefined) => string {
  const trusted = trustedPeer(option);
  return (socketAddress, given) =>
    typeof given === 'string' && trusted(socketAddress) && TRACE_ID_PATTERN.test(given)
      ? given
      : newTraceId();
}

/** A line written while serving a request, other than its request line (cloud code, webhooks, realtime). */
export interface TracedLine {
  requestId: string;
  kind: 'cloud' | 'webhook' | 'realtime';
  level: 'debug' | 'info' | 'warn' | 'error';
  text: string;
}

/** Where such lines are kept (logs/request-logs.ts), when the service keeps lines. */
export interface TraceSink {
  keep(line: TracedLine): void;
}

/** A text as any log may hold it (see redactorOf). */
export type Redact = (text: string) => string;

/**
 * The one scrub of texts that cloud code, webhooks and deliveries write: the log scrub
 * (docs/protocol.md#log-scrubbing: secret keys, also inside embedded JSON), and the values of the
 * app's own keys (`secrets`) wherever they appear, replaced by [FILTERED].
 */
export function redactorOf(secrets: readonly string[]): Redact {
  const values = secrets.filter((secret) => secret.length > 0);
  return (text) => {
    let out = String(scrub(text));
    for (const secret of values) if (out.includes(secret)) out = out.split(secret).join(FILTERED);
    return out;
  };
}

/**
 * The request cloud code is running for, while it runs (cloud/invoke.ts opens it around a handler
 * of a request that has an id): what it writes with `request.log` or `console` is tied to it. Only
 * cloud code runs inside it, so the requests that run none pay nothing for it.
 */
export interface TraceScope {
  readonly requestId: string;
  readonly sink: TraceSink | undefined;
  /** How what it writes is scrubbed, wherever it goes (the kept lines, the process's output, the log). */
  readonly redact: Redact;
}

export const traceScope = new AsyncLocalStorage<TraceScope>();
