import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { OptionError, type ServiceOptions } from '../../config/options.ts';
import type { HookClient } from '../../hooks/client.ts';
import type { Logger } from '../../kernel/log.ts';
import type { CloudDefinitions, CloudRegistry } from '../registry.ts';
import { type IncumbentKind, wrapHandler } from './handlers.ts';
import { httpRequest } from './http-request.ts';
import { currentLink, installController, Parse, type ServiceLink } from './sdk.ts';
import type { IncumbentValidator } from './validate.ts';

type RateLimitRule = ServiceOptions['rateLimit'][number];

/** What loading the option `parseCloud` made: the link to bind once the router exists, the module's rate limits. */
export interface ParseCloud {
  link: ServiceLink;
  rateLimits: RateLimitRule[];
}

/** The module being loaded (loads are one at a time: `Parse.Cloud` is one object per process). */
let loading:
  | { definitions: CloudDefinitions; link: ServiceLink; log: Logger; rateLimits: RateLimitRule[] }
  | undefined;
let queue: Promise<unknown> = Promise.resolve();

/** A name as a regular expression that matches it literally. */
const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function current(what: string) {
  if (!loading)
    throw new Error(`Parse.Cloud.${what} registers only while the module named by parseCloud loads.`);
  return loading;
}

/** A validator's `rateLimit` as a rule of the option `rateLimit`, over the handler's own route. */
function rateLimitOf(validator: unknown, pathPattern: string, methods: RateLimitRule['methods']): void {
  const limit = (validator as IncumbentValidator | undefined)?.rateLimit;
  if (!limit || typeof validator === 'function') return;
  const window = Number(limit.requestTimeWindow) / 1000;
  const max = Number(limit.requestCount);
  if (!(window > 0) || !Number.isInteger(max) || max < 1) {
    throw new Error('rateLimit needs requestTimeWindow (ms) and requestCount (a positive whole number).');
  }
  current('rateLimit').rateLimits.push({
    path: pathPattern,
    methods,
    window,
    max,
    by: 'ip',
    ...(limit.errorResponseMessage ? { error: limit.errorResponseMessage } : {}),
  });
}

function register(kind: IncumbentKind, handler: unknown, validator: unknown) {
  const { link, log } = current(kind);
  if (typeof handler !== 'function') throw new Error(`Parse.Cloud.${kind}: the handler must be a function.`);
  return wrapHandler(kind, handler as (r: unknown) => unknown, validator as IncumbentValidator, link, log);
}

/** A class given as a name, a Parse.Object subclass or the SDK's class itself (`Parse.User`). */
function classNameOf(given: unknown): string {
  if (typeof given === 'string') return given;
  if (typeof given === 'function') return new (given as new () => { className: string })().className;
  throw new Error(`invalid class ${JSON.stringify(given)}`);
}

/** The incumbent's `Parse.Cloud` registrations, onto the module's definitions in the registry. */
function addDefinitions(): void {
  const onClass =
    (
      kind:
        | 'beforeSave'
        | 'afterSave'
        | 'beforeDelete'
        | 'afterDelete'
        | 'beforeFind'
        | 'afterFind'
        | 'beforeSubscribe'
        | 'afterLiveQueryEvent',
    ) =>
    (given: unknown, handler: unknown, validator?: unknown) => {
      const className = classNameOf(given);
      current(kind).definitions[kind](className, register(kind, handler, validator));
      if (kind === 'beforeSave' || kind === 'beforeDelete') {
        const methods: RateLimitRule['methods'] = kind === 'beforeSave' ? ['POST', 'PUT'] : ['DELETE'];
        rateLimitOf(validator, `^/classes/${literal(className)}(/[^/]*)?$`, methods);
      }
    };
  const onAccount =
    (kind: 'beforeLogin' | 'afterLogin' | 'afterLogout' | 'beforePasswordResetRequest' | 'beforeConnect') =>
    (handler: unknown, validator?: unknown) =>
      current(kind).definitions[kind](register(kind, handler, validator));
  Object.assign(Parse.Cloud, {
    define(name: string, handler: unknown, validator?: unknown) {
      current('define').definitions.define(name, register('function', handler, validator));
      rateLimitOf(validator, `^/functions/${literal(String(name))}$`, ['POST']);
    },
    job(name: string, handler: unknown) {
      current('job').definitions.job(name, register('job', handler, undefined));
    },
    beforeSave: onClass('beforeSave'),
    afterSave: onClass('afterSave'),
    beforeDelete: onClass('beforeDelete'),
    afterDelete: onClass('afterDelete'),
    beforeFind: onClass('beforeFind'),
    afterFind: onClass('afterFind'),
    beforeSubscribe: onClass('beforeSubscribe'),
    afterLiveQueryEvent: onClass('afterLiveQueryEvent'),
    beforeLogin: onAccount('beforeLogin'),
    afterLogin: onAccount('afterLogin'),
    afterLogout: onAccount('afterLogout'),
    beforeConnect: onAccount('beforeConnect'),
    beforePasswordResetRequest: onAccount('beforePasswordResetRequest'),
  });
}

/**
 * Loads the module named by the option `parseCloud`: cloud code written for the incumbent, which
 * registers through the global `Parse` (docs/cloud.md#cloud-code-written-for-the-incumbent). Its
 * registrations join the registry after the option `cloud`'s. A `.cjs` file (or a `.js` file
 * that is CommonJS) is required, anything else imported; each load runs the module afresh.
 */
export function loadParseCloud(
  file: string,
  registry: CloudRegistry,
  options: ServiceOptions,
  client: HookClient,
  log: Logger,
): Promise<ParseCloud> {
  const run = queue.then(async () => {
    const resolved = path.resolve(file);
    if (!existsSync(resolved)) throw new OptionError('parseCloud', `no such file: ${resolved}`);
    installController();
    addDefinitions();
    if (!Parse.applicationId) Parse.initialize(options.appId, options.javascriptKey);
    const globals = globalThis as { Parse?: unknown };
    globals.Parse = Parse;
    const result: ParseCloud = { link: { client }, rateLimits: [] };
    // A handler calls out through its own service's client (its rules); outside any handler, through
    // the client of the module loaded last.
    Parse.Cloud.httpRequest = (request: Record<string, unknown>) =>
      httpRequest((currentLink() ?? result.link).client, request);
    loading = { definitions: registry.definitions(), link: result.link, log, rateLimits: result.rateLimits };
    try {
      await importFresh(resolved);
    } catch (err) {
      throw new OptionError('parseCloud', `${resolved} failed to load: ${(err as Error).message}`);
    } finally {
      loading = undefined;
    }
    return result;
  });
  queue = run.catch(() => {});
  return run;
}

let loads = 0;

async function importFresh(file: string): Promise<void> {
  const require = createRequire(import.meta.url);
  if (file.endsWith('.cjs') || file.endsWith('.js')) {
    try {
      delete require.cache[file];
      require(file);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ERR_REQUIRE_ESM') throw err;
    }
  }
  await import(`${pathToFileURL(file).href}?load=${++loads}`);
}
