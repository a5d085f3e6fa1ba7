import type { Data } from '../data/data.ts';
import type { Logger } from '../kernel/log.ts';
import type { TraceSink } from '../kernel/trace.ts';
import { describeUrl, type HookAnswer, HookClient, HookTransportError } from './client.ts';
import { type Delivery, DeliveryLog } from './deliveries.ts';
import { HookRegistry } from './registry.ts';

/** Which hook a call is for (as the delivery log names it). */
export interface HookTarget {
  kind: 'function' | 'trigger';
  url: string;
  functionName?: string;
  className?: string;
  triggerName?: string;
  objectId?: string;
  /** The trace id of the HTTP request the call serves (kernel/trace.ts), if any. */
  requestId?: string;
}

/**
 * Calls webhooks and records every attempt in the delivery log. Functions and before-triggers
 * get one attempt (the caller is waiting); after-triggers are delivered in the background and
 * retried with backoff (`hooks.retries`, `hooks.retryBackoffMs`, doubling) when the call failed
 * in transit: a timeout, an unreachable receiver, an HTTP error or an answer that is not the
 * protocol's. An `{error}` answer is the receiver's word and is not retried, nor is a URL the
 * client refuses (plain http without `hooks.allowInsecureUrls`).
 */
export class Webhooks {
  readonly client: HookClient;
  readonly registry: HookRegistry;
  readonly deliveries: DeliveryLog;
  private readonly pending = new Set<Promise<void>>();
  /** Waits between retries: ended at once by close(). */
  private readonly waits = new Map<ReturnType<typeof setTimeout>, () => void>();
  private closed = false;
  private readonly retry: { retries: number; backoffMs: number };

  /** `isLocalFunction`: whether cloud code defines a function of that name (no hook may take it). */
  constructor(
    data: Data,
    private readonly log: Logger,
    isLocalFunction?: (name: string) => boolean,
    /** Where a call made while serving a request is kept as a line of it (GET /logs). */
    private readonly sink?: TraceSink,
  ) {
    const { options } = data.core;
    this.retry = { retries: options.hooks.retries, backoffMs: options.hooks.retryBackoffMs };
    this.client = new HookClient(options);
    this.registry = new HookRegistry(data, this.client, isLocalFunction);
    this.deliveries = new DeliveryLog(options.hooks.deliveryLogSize);
    if (options.hooks.allowInsecureUrls) {
      log.warn(
        'hooks.allowInsecureUrls is on: webhooks may use plain http (for tests and local development only)',
      );
    }
  }

  private record(target: HookTarget, attempt: number, started: number, outcome: Partial<Delivery>): void {
    const delivery = this.deliveries.record({
      at: new Date(started).toISOString(),
      kind: target.kind,
      hook:
        target.kind === 'function'
          ? (target.functionName ?? '')
          : `${target.className ?? ''}.${target.triggerName ?? ''}`,
      ...(target.functionName ? { functionName: target.functionName } : {}),
      ...(target.className ? { className: target.className } : {}),
      ...(target.triggerName ? { triggerName: target.triggerName } : {}),
      ...(target.objectId ? { objectId: target.objectId } : {}),
      url: describeUrl(target.url),
      durationMs: Math.round(Date.now() - started),
      attempt,
      status: 'failed',
      ...outcome,
    });
    if (this.sink && target.requestId !== undefined) {
      const { hook, url, status, httpStatus, durationMs, error } = delivery;
      this.sink.keep({
        requestId: target.requestId,
        kind: 'webhook',
        level: status === 'succeeded' ? 'info' : 'warn',
        text: `webhook ${hook} ${url} attempt ${attempt}: ${status}${httpStatus ? ` (HTTP ${httpStatus})` : ''} in ${durationMs} ms${error ? `: ${error}` : ''}`,
      });
    }
  }

  /** One attempt; the answer, or a HookTransportError. Recorded either way. */
  async call(target: HookTarget, body: unknown, attempt = 1, retrying = false): Promise<HookAnswer> {
    const started = Date.now();
    try {
      const answer = await this.client.post(target.url, body);
      this.record(target, attempt, started, {
        status: answer.ok ? 'succeeded' : 'failed',
        httpStatus: answer.status,
        ...(answer.ok ? {} : { error: answer.error }),
      });
      return answer;
    } catch (err) {
      const transport =
        err instanceof HookTransportError
          ? err
          : new HookTransportError('unreachable', `The webhook ${describeUrl(target.url)} failed.`);
      this.record(target, attempt, started, {
        status: retrying && transport.failure !== 'refused' ? 'retrying' : 'failed',
        error: transport.message,
        ...(transport.status ? { httpStatus: transport.status } : {}),
      });
      throw transport;
    }
  }

  /** An after-trigger call, in the background, retried with backoff; never throws. */
  deliver(target: HookTarget, body: unknown): void {
    const { retries, backoffMs } = this.retry;
    const run = async () => {
      for (let attempt = 1; attempt <= retries + 1 && !this.closed; attempt++) {
        const last = attempt === retries + 1;
        try {
          await this.call(target, body, attempt, !last);
          return;
        } catch (err) {
          // A URL refused by the rules stays refused: no retry.
          const refused = err instanceof HookTransportError && err.failure === 'refused';
          if (last || refused || this.closed) {
            this.log.warn(
              {
                hook: target.triggerName,
                className: target.className,
                ...(target.requestId ? { requestId: target.requestId } : {}),
                attempts: attempt,
                err: (err as Error).message,
              },
              'webhook delivery failed',
            );
            return;
          }
          await this.sleep(backoffMs * 2 ** (attempt - 1));
        }
      }
    };
    const p = run().finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waits.delete(timer);
        resolve();
      }, ms);
      this.waits.set(timer, resolve);
    });
  }

  /** Waits for deliveries under way (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  /** Stops retrying: pending waits end at once, nothing more is sent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const [timer, resolve] of this.waits) {
      clearTimeout(timer);
      resolve();
    }
    this.waits.clear();
    await this.idle();
    this.client.close();
  }
}
