import { AsyncLocalStorage } from 'node:async_hooks';
import { isObject } from '@bds/client/protocol';
import type { Data } from '../data/data.ts';
import { type Caller, MASTER } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Row } from '../kernel/records.ts';
import { type Redact, type TraceSink, traceScope } from '../kernel/trace.ts';
import { captureConsole } from './console.ts';
import type { CloudRequest, DataApi, Handler } from './registry.ts';

/**
 * How deep cloud code may nest: a handler whose api write fires a trigger that writes again...
 * Past this, the call that would go one level deeper fails with 141 (so a trigger that writes
 * what triggers it ends, with an error, instead of looping).
 */
export const MAX_CLOUD_DEPTH = 10;

const depth = new AsyncLocalStorage<number>();

/** The text of anything a handler threw: its message, never a stack. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message || 'Cloud code failed.';
  if (isObject(err) && typeof err.message === 'string' && err.message) return err.message;
  if (typeof err === 'string' && err) return err;
  return 'Cloud code failed.';
}

/**
 * An answer a handler gives on purpose with its own code (a `Parse.Error` thrown by cloud code
 * written for the incumbent, or a failed validator): the call answers that code and text.
 */
export class CloudAnswerError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The caller each request was built for (cloud code written for the incumbent acts as it). */
const callers = new WeakMap<CloudRequest, Caller>();

/** Who a handler's request was made for. */
export function callerOf(request: CloudRequest): Caller | undefined {
  return callers.get(request);
}

/** Who a handler runs for, and the request data every handler gets. */
export interface Invocation {
  caller: Caller;
  context: Record<string, unknown>;
  ip?: string | null;
  /** The request's headers, secrets filtered (kernel/context.ts headersOf); none outside a REST request. */
  headers?: Readonly<Record<string, string>>;
  /** The trace id of the HTTP request served (kernel/trace.ts). */
  requestId?: string;
}

/** The trace id of the HTTP request each handler request serves. */
const traces = new WeakMap<CloudRequest, string>();

/** The trace id of the HTTP request a handler's request serves, if any (webhook calls carry it). */
export function traceOf(request: CloudRequest): string | undefined {
  return traces.get(request);
}

/** Builds handler requests and runs handlers: nesting bounded, errors as protocol errors. */
export class Invoker {
  /** A request's user row, looked up once per caller (callers are resolved once per request). */
  private readonly users = new WeakMap<Caller, Promise<Row | undefined>>();

  /**
   * `redact`: how what cloud code writes while serving a request is scrubbed, wherever it goes;
   * `sink`: where those lines are kept (GET /logs).
   */
  constructor(
    private readonly data: Data,
    private readonly redact: Redact,
    private readonly sink?: TraceSink,
  ) {
    captureConsole();
  }

  private userOf(caller: Caller): Promise<Row | undefined> {
    if (!caller.user) return Promise.resolve(undefined);
    let found = this.users.get(caller);
    if (!found) {
      found = this.data.lookups.userById(caller.user.objectId).then((row) => {
        if (!row) return undefined;
        const { password: _password, ...rest } = row;
        return { className: '_User', ...rest };
      });
      this.users.set(caller, found);
    }
    return found;
  }

  /** The data api of a request: as its caller, and as master, both through the one pipeline. */
  api(caller: Caller, ip: string | null): CloudRequest['api'] {
    return { asCaller: this.dataApi(caller, ip), asMaster: this.dataApi(MASTER, ip) };
  }

  private dataApi(caller: Caller, ip: string | null): DataApi {
    const { reads, writes } = this.data;
    // Each call is its own request: its triggers share a fresh context. Made while the handler
    // serves an HTTP request, it carries that request's trace id (row history, GET /logs).
    const ctx = (): Ctx => {
      const requestId = traceScope.getStore()?.requestId;
      return requestId === undefined
        ? { caller, source: 'cloud', context: {}, ip }
        : { caller, source: 'cloud', context: {}, ip, requestId };
    };
    return {
      find: async (className, query = {}) => {
        const { count: _count, ...params } = query;
        return (await reads.find(ctx(), className, params)).results;
      },
      get: (className, objectId, options = {}) => reads.get(ctx(), className, objectId, { ...options }),
      count: async (className, where = {}) =>
        (await reads.find(ctx(), className, { where, count: 1, limit: 0 })).count ?? 0,
      create: (className, fields) => writes.create(ctx(), className, fields),
      update: (className, objectId, fields) => writes.update(ctx(), className, objectId, fields),
      delete: (className, objectId) => writes.delete(ctx(), className, objectId),
    };
  }

  async request(call: Invocation, extra: Partial<CloudRequest>): Promise<CloudRequest> {
    const { caller } = call;
    const ip = call.ip ?? null;
    const request: CloudRequest = {
      params: {},
      user: await this.userOf(caller),
      master: caller.isMaster,
      installationId: caller.installationId,
      ip,
      headers: { ...call.headers },
      context: call.context,
      message: () => {},
      api: this.api(caller, ip),
      ...extra,
    };
    callers.set(request, caller);
    if (call.requestId !== undefined) traces.set(request, call.requestId);
    return request;
  }

  /**
   * Runs one handler one level deeper. Anything it throws becomes `code` (141 for functions,
   * jobs and find triggers, 142 for a before-trigger's refusal) with its message; a
   * CloudAnswerError keeps its own code.
   */
  async run(handler: Handler, request: CloudRequest, code: number): Promise<unknown> {
    const current = depth.getStore() ?? 0;
    if (current >= MAX_CLOUD_DEPTH) {
      throw new BdsError(
        ErrorCode.SCRIPT_FAILED,
        `Cloud code nests deeper than ${MAX_CLOUD_DEPTH} calls (a trigger that writes what triggers it?).`,
      );
    }
    const requestId = traces.get(request);
    try {
      // What the handler logs (request.log, console) is tied to the request it serves.
      if (requestId !== undefined && traceScope.getStore()?.requestId !== requestId) {
        const scope = { requestId, sink: this.sink, redact: this.redact };
        return await traceScope.run(scope, () => depth.run(current + 1, () => handler(request)));
      }
      return await depth.run(current + 1, () => handler(request));
    } catch (err) {
      if (err instanceof CloudAnswerError) throw new BdsError(err.code, err.message);
      throw new BdsError(code, messageOf(err));
    }
  }
}
