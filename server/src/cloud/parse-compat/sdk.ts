import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { isObject } from '@bds/client/protocol';
import type { HookClient } from '../../hooks/client.ts';
import { type Caller, MASTER } from '../../kernel/caller.ts';
import type { Ctx } from '../../kernel/context.ts';
import { toBdsError } from '../../kernel/errors.ts';
import type { Invocation } from '../invoke.ts';

/**
 * The `parse` package's Node build, as cloud code written for the incumbent sees it (the global
 * `Parse`). Its objects are the package's own; only the way it reaches a server is replaced: inside
 * a handler, every call it makes is dispatched in-process into the service's router, as the
 * handler's caller (docs/cloud.md#cloud-code-written-for-the-incumbent).
 */
export const Parse: any = createRequire(import.meta.url)('parse/node');

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** How the SDK reaches one service in-process: its router, and sessions resolved to callers. */
export interface InProcessService {
  dispatch(request: {
    method: Method;
    path: string;
    query: Record<string, unknown>;
    body: unknown;
    ctx: Ctx;
  }): Promise<{ status?: number; body: unknown }>;
  sessionCaller(sessionToken: string): Caller | Promise<Caller>;
}

/** One loaded module's way to its service: set once the service's router exists (createService). */
export interface ServiceLink {
  service?: InProcessService;
  /** Its outgoing calls (`Parse.Cloud.httpRequest`), by the service's rules for webhook calls. */
  client: HookClient;
}

interface HandlerScope {
  link: ServiceLink;
  call: Invocation;
}

const scope = new AsyncLocalStorage<HandlerScope>();

/** Runs a handler of a module loaded for `link`: the SDK calls it makes act as `call.caller`. */
export function inHandler<T>(link: ServiceLink, call: Invocation, run: () => T): T {
  return scope.run({ link, call }, run);
}

/** The link of the handler running now, if any. */
export function currentLink(): ServiceLink | undefined {
  return scope.getStore()?.link;
}

const METHODS = new Set<string>(['GET', 'POST', 'PUT', 'DELETE']);

let installed = false;

/**
 * Replaces the SDK's REST controller, once per process. A call made outside any handler (the
 * module's top level, a timer, or an app's own client code in the same process) goes through the
 * controller that was there before, over HTTP to `Parse.serverURL`, as it always did.
 */
export function installController(): void {
  if (installed) return;
  installed = true;
  const { CoreManager } = Parse;
  const previous = CoreManager.getRESTController();
  // Two requests for one object are two objects, as on the incumbent's server.
  Parse.Object.disableSingleInstance();
  CoreManager.setRESTController({
    ...previous,
    async request(method: string, path: string, data: unknown, options: Record<string, any> = {}) {
      const current = scope.getStore();
      if (!current) return previous.request(method, path, data, options);
      const service = current.link.service;
      if (!service)
        throw new Parse.Error(Parse.Error.INTERNAL_SERVER_ERROR, 'The service is not serving yet.');
      if (!METHODS.has(method))
        throw new Parse.Error(Parse.Error.INVALID_JSON, `Method ${method} is not supported.`);
      try {
        // Who the call is for: the master key when asked, else the session given, else the caller.
        const caller: Caller = options.useMasterKey
          ? MASTER
          : typeof options.sessionToken === 'string'
            ? await service.sessionCaller(options.sessionToken)
            : current.call.caller;
        const ctx: Ctx = {
          caller,
          source: 'cloud',
          context: isObject(options.context) ? options.context : {},
          ip: current.call.ip ?? null,
        };
        // The SDK's encoded JSON, copied: the service never holds the handler's objects.
        const payload = isObject(data) ? JSON.parse(JSON.stringify(data)) : {};
        const reads = method === 'GET' || method === 'DELETE';
        const answer = await service.dispatch({
          method: method as Method,
          path: `/${path.replace(/^\/+/, '')}`,
          query: method === 'GET' ? payload : {},
          body: reads ? undefined : payload,
          ctx,
        });
        const body = answer.body === undefined ? {} : JSON.parse(JSON.stringify(answer.body));
        return options.returnStatus ? { ...body, _status: answer.status ?? 200, _headers: {} } : body;
      } catch (err) {
        if (err instanceof Parse.Error) throw err;
        const known = toBdsError(err);
        throw new Parse.Error(known.code, known.message);
      }
    },
  });
}
