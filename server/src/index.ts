import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, normalPath } from '@bds/client/protocol';
import express from 'express';
import { noAnalytics, StoredAnalytics } from './analytics/service.ts';
import { CallerResolver } from './auth/caller.ts';
import { Cloud } from './cloud/index.ts';
import { type ServiceOptions, type ServiceOptionsInput, validateOptions } from './config/options.ts';
import { type Core, createCore } from './data/core.ts';
import { Data } from './data/data.ts';
import { InProcessEventBus } from './data/events.ts';
import { History } from './data/history.ts';
import { createMailAdapter } from './email/adapter.ts';
import { createFileAdapter, Files } from './files/service.ts';
import { flushAnswers } from './http/answers.ts';
import { type AppState, buildApp, createHandler } from './http/app.ts';
import { RateLimiter, RedisRateLimitStore } from './http/rate-limit.ts';
import { belowMount, Router, requestPath } from './http/router.ts';
import { accountPages } from './http/routes/account-pages.ts';
import { registerAggregateRoutes } from './http/routes/aggregate.ts';
import { registerAnalyticsRoutes } from './http/routes/analytics.ts';
import { registerBatchRoute } from './http/routes/batch.ts';
import { registerClassRoutes } from './http/routes/classes.ts';
import { registerCloudRoutes } from './http/routes/cloud.ts';
import { registerConfigRoutes } from './http/routes/config.ts';
import { registerEmailRoutes } from './http/routes/email.ts';
import { registerFileRoutes } from './http/routes/files.ts';
import { registerFromParseRoutes } from './http/routes/from-parse.ts';
import { registerHistoryRoutes } from './http/routes/history.ts';
import { registerHookRoutes } from './http/routes/hooks.ts';
import { registerLiveRoutes } from './http/routes/live.ts';
import { registerLogRoutes } from './http/routes/logs.ts';
import { registerMiscRoutes } from './http/routes/misc.ts';
import { registerOpenApiRoute } from './http/routes/openapi.ts';
import { registerPerformanceRoutes } from './http/routes/performance.ts';
import { registerPushRoutes } from './http/routes/push.ts';
import { registerSchemaRoutes } from './http/routes/schemas.ts';
import { registerSecurityRoutes } from './http/routes/security.ts';
import { registerUserRoutes } from './http/routes/users.ts';
import { createHttpServer } from './http/server.ts';
import { IdempotencyGuard } from './idempotency/guard.ts';
import { Jobs } from './jobs/index.ts';
import { RedisTickLock, StoreTickLock } from './jobs/scheduler.ts';
import { type Clock, systemClock } from './kernel/clock.ts';
import { createLogger, type Logger } from './kernel/log.ts';
import { redactorOf } from './kernel/trace.ts';
import { LiveQuery } from './live/server.ts';
import { RequestLogs } from './logs/request-logs.ts';
import { PushService } from './push/service.ts';
import { followRemoteSchemas, RedisEventBus } from './redis/event-bus.ts';
import { RedisLink } from './redis/link.ts';
import { SchemaRegistry } from './schema/registry.ts';
import { openStore } from './storage/open.ts';
import { FromParseRuns } from './transfer/from-parse-runs.ts';
import { transferFiles } from './transfer/open.ts';
import { Users } from './users/service.ts';

export type { CloudDefinitions, CloudRequest, DataApi, FunctionRules, Handler } from './cloud/index.ts';
export type { ServiceOptions, ServiceOptionsInput } from './config/options.ts';
export { loadOptions, OptionError, validateOptions } from './config/options.ts';
export type { Caller } from './kernel/caller.ts';
export type { Clock } from './kernel/clock.ts';
export { BdsError, ErrorCode } from './kernel/errors.ts';
export type { EventBus, WriteEvent } from './kernel/events.ts';

export interface Service {
  /** Mountable Express app: `parent.use('/api', service.app)`. */
  app: express.Express;
  options: ServiceOptions;
  core: Core;
  /** Record reads, the write pipeline and the service's own lookups, for embedders and tests. */
  data: Data;
  /** Resolves credentials to a caller (caches sessions and roles, following the write events). */
  callers: CallerResolver;
  /** Cloud code, webhooks and the triggers they make. */
  cloud: Cloud;
  /** Jobs and the scheduler of `_JobSchedule` rows. */
  jobs: Jobs;
  /** Realtime subscriptions (LiveQuery), on the HTTP server `listen` starts, at `liveQuery.path`. */
  live: LiveQuery;
  /** The row history's reads, reverts and restores, and its pruning (docs/protocol.md#row-history). */
  history: History;
  /** The routes under the mount path (methods, patterns, precedence), for crawls of every route. */
  routes(): Array<{ method: string; pattern: string; precedence: number }>;
  /**
   * Starts an HTTP server with the app at the mount path; port 0 picks a free one. With `http`, the
   * service takes over a server made by `createHttpServer()` that already listens (`serve()`).
   */
  listen(
    port?: number,
    host?: string,
    http?: ReturnType<typeof createHttpServer>,
  ): Promise<{ server: Server; port: number; url: string }>;
  /** Stops accepting requests, waits for in-flight ones (up to shutdownGraceMs), then closes the store. */
  close(): Promise<void>;
}

const UNEXPECTED = JSON.stringify({ code: ErrorCode.INTERNAL_SERVER_ERROR, error: 'Internal server error.' });

export async function createService(
  input: ServiceOptionsInput | Record<string, unknown>,
  extra: { log?: Logger; clock?: Clock } = {},
): Promise<Service> {
  const options = validateOptions(input as Record<string, unknown>);
  const log = extra.log ?? createLogger(options.logLevel);
  const store = await openStore({ ...options, clock: extra.clock ?? systemClock, log });
  const schemas = new SchemaRegistry(store);
  // With Redis, events cross instances and shared state lives there (docs/architecture/scale-out.md).
  const redis = options.redisURL
    ? new RedisLink(options.redisURL, options.redis.keyPrefix ?? `bds:${options.appId}:`, log)
    : undefined;
  let forgetAll = () => {};
  let bus: RedisEventBus | undefined;
  if (redis) {
    bus = new RedisEventBus(redis, log, {
      maxLen: options.redis.streamMaxLen,
      beforeRemote: followRemoteSchemas(store, schemas),
      onGap: () => forgetAll(),
    });
    try {
      await redis.connect();
      // Reading starts before anything is loaded: a change made meanwhile on another instance is
      // either in what is loaded or among the events read.
      await bus.start();
    } catch (err) {
      await bus.close();
      await redis.close();
      await store.close();
      throw err;
    }
  }
  await schemas.load();
  const core = createCore({ options, store, schemas, events: bus ?? new InProcessEventBus(log), log });
  const data = new Data(core);
  const clock = extra.clock ?? systemClock;
  const callers = new CallerResolver(data, clock);
  // Request log lines kept for GET /logs (option requestLogSize), shared through Redis when configured.
  // What cloud code, webhooks and deliveries write is scrubbed, the app's keys included, wherever it goes.
  const redact = redactorOf(
    [
      options.masterKey,
      options.restAPIKey,
      options.javascriptKey,
      options.clientKey,
      options.webhookKey,
    ].filter((key): key is string => typeof key === 'string'),
  );
  const requestLogs =
    options.requestLogSize > 0 ? new RequestLogs(options.requestLogSize, redact, redis) : undefined;
  const cloud = await Cloud.start(data, log, redact, requestLogs);
  const jobs = new Jobs(
    data,
    cloud,
    clock,
    log,
    redis ? new RedisTickLock(redis, new StoreTickLock(data)) : undefined,
  );
  // Every hook into reads and writes is bound here, each with a name and a priority (lower runs
  // first), and sealed before the service serves (server/test/hook-chain.test.ts lists them). The
  // after-commit listeners declare their phase on the event bus instead.
  const { hooks } = core;
  hooks.writeRules.bind('webhook registrations (_Hooks)', 10, cloud.webhooks.registry.rules);
  hooks.writeRules.bind('job schedules (_JobSchedule)', 20, jobs.scheduleRules);
  hooks.beforeWrite.bind('cloud code, then webhooks', 10, cloud.triggers);
  hooks.find.bind('cloud code', 10, cloud.triggers);
  hooks.account.bind('cloud code', 10, cloud.triggers);
  const state: AppState = { ready: false, inFlight: 0 };
  let publicUrl = options.serverURL ?? `http://localhost:${options.port}${options.mountPath}`;

  const limiter = new RateLimiter(
    [...options.rateLimit, ...cloud.rateLimits],
    redis ? new RedisRateLimitStore(redis) : undefined,
  );
  const router = new Router((req) => limiter.check(req));
  // Cloud code written for the incumbent reaches the service through the router, in-process.
  cloud.connect({
    dispatch: (request) => router.dispatch({ ...request, inBatch: false }),
    sessionCaller: (sessionToken) => callers.resolve({ master: false, sessionToken }),
  });
  const mailer = createMailAdapter(options);
  const users = new Users(data, mailer, () => publicUrl, callers, cloud.authProviders, redis);
  state.pages = accountPages(users, options.appId);
  // The order routes are registered in decides nothing (http/router.ts): /users, /classes/_User,
  // /sessions and /classes/_Session get the account rules by their routes' precedence.
  registerUserRoutes(router, users, data, () => publicUrl);
  registerEmailRoutes(router, options.dataDir);
  registerClassRoutes(router, data, () => publicUrl);
  registerSchemaRoutes(router, data);
  registerConfigRoutes(router, data);
  registerBatchRoute(router, core);
  const stored = options.analytics.adapter === 'store' ? new StoredAnalytics(data) : undefined;
  await stored?.start();
  const analytics = stored ?? noAnalytics;
  registerMiscRoutes(router, {
    track: (event) => analytics.track(event),
    switches: {
      push: options.push !== undefined,
      analyticsStored: analytics.stores,
      liveQuery: options.liveQuery.classNames.length > 0,
    },
    serverOptions: { options, cloudProviders: [...cloud.authProviders.keys()] },
  });
  registerAnalyticsRoutes(router, data, analytics);
  const idempotency = options.idempotency ? new IdempotencyGuard(data, options.idempotency, log) : undefined;
  if (idempotency) state.beforeDispatch = (req, method, path) => idempotency.claim(req, method, path);
  const files = new Files(data, createFileAdapter(options, data), () => publicUrl);
  hooks.fileUrl.bind('files', 10, (name) => files.url(name));
  registerFileRoutes(router, state, files);
  registerAggregateRoutes(router, data);
  const push = new PushService(data, log);
  registerPushRoutes(router, push);
  await push.resume();
  registerCloudRoutes(router, cloud, jobs);
  registerOpenApiRoute(
    router,
    data,
    (caller) => cloud.functions.callableBy(caller),
    () => publicUrl,
  );
  registerHookRoutes(router, cloud.webhooks);
  registerLogRoutes(router, requestLogs);
  const live = new LiveQuery(data, callers, clock, cloud.triggers, requestLogs);
  registerLiveRoutes(router, live);
  registerSecurityRoutes(router, data, callers);
  registerPerformanceRoutes(router, store.performance);
  const history = new History(data, clock, log);
  registerHistoryRoutes(router, history);
  const fromParse = new FromParseRuns(
    data,
    transferFiles(options, data),
    log,
    (provider) => Object.hasOwn(options.auth, provider) || cloud.authProviders.has(provider),
  );
  registerFromParseRoutes(router, fromParse);
  // Events were lost between instances (one was away longer than the stream keeps them): every
  // cache that follows events starts over.
  forgetAll = () => {
    callers.forgetAll();
    live.forgetHistory();
    const failed = (err: unknown) =>
      log.error(
        { err: err instanceof Error ? err.message : String(err) },
        'reloading after lost events failed',
      );
    schemas.load().catch(failed);
    cloud.webhooks.registry.load().catch(failed);
    jobs.scheduler.poke();
  };

  const handler = createHandler(core, callers, router, state, limiter, requestLogs);
  const app = buildApp(handler);
  hooks.seal();
  state.ready = true;
  jobs.start(options.jobs);
  history.start();
  let server: Server | undefined;
  let closing: Promise<void> | undefined;

  const service: Service = {
    app,
    options,
    core,
    data,
    callers,
    cloud,
    jobs,
    live,
    history,
    routes: () => router.routes(),
    async listen(port = options.port, host = options.host, http = createHttpServer()) {
      const root = express();
      root.disable('x-powered-by');
      root.use(options.mountPath, app);
      root.get('/health', (_req, res) => {
        res.json({ status: state.ready ? 'ok' : 'starting' });
      });
      // Requests under the mount path skip Express (which costs more CPU than a primary-key read)
      // and go straight to the handler, with the mount path stripped from the normal form of the
      // path (so `//api/login` and `/api//login` are both `/login`); anything else (and a path
      // that has no normal form) still goes through `root`.
      const mount = requestPath(options.mountPath);
      server = http.server;
      http.upgrade((req, socket, head) => live.handleUpgrade(req, socket, head));
      http.handle((req, res) => {
        const url = req.url ?? '/';
        const q = url.indexOf('?');
        const path = normalPath(q < 0 ? url : url.slice(0, q));
        const rest = path === undefined ? undefined : belowMount(path, mount);
        if (rest === undefined) {
          root(req, res);
          return;
        }
        req.url = q < 0 ? rest : rest + url.slice(q);
        handler(req, res).catch((err: unknown) => {
          log.error({ err: err instanceof Error ? err.stack : String(err) }, 'unexpected error');
          if (res.headersSent) res.destroy();
          else res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' }).end(UNEXPECTED);
        });
      });
      if (!server.listening) {
        await new Promise<void>((resolve, reject) => {
          server!.once('error', reject);
          server!.listen(port, host, () => resolve());
        });
      }
      const actual = (server.address() as AddressInfo).port;
      const url = `http://127.0.0.1:${actual}${options.mountPath}`;
      if (!options.serverURL) publicUrl = `http://localhost:${actual}${options.mountPath}`;
      return { server, port: actual, url };
    },
    close() {
      closing ??= (async () => {
        state.ready = false;
        await live.close(Math.min(options.shutdownGraceMs, 2000));
        if (server) {
          const stopped = new Promise<void>((resolve) => server!.close(() => resolve()));
          server.closeIdleConnections();
          const deadline = Date.now() + options.shutdownGraceMs;
          while (state.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
          // An answer still waiting for the end of its turn is written before its socket closes.
          flushAnswers();
          server.closeAllConnections();
          await stopped;
        } else {
          const deadline = Date.now() + options.shutdownGraceMs;
          while (state.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        }
        await fromParse.close();
        await jobs.close(options.shutdownGraceMs);
        await history.close();
        await cloud.close();
        await push.close();
        await idempotency?.close();
        await users.idle();
        await mailer.close?.();
        await requestLogs?.close();
        await bus?.close();
        await store.close();
        await redis?.close();
        log.flush();
      })();
      return closing;
    },
  };
  return service;
}

/**
 * The service as `npm run server` runs it: the HTTP server listens at once and answers 503
 * (`/health`: `{"status":"starting"}`) until the store is open and migrated, then serves.
 */
export async function serve(
  input: ServiceOptionsInput | Record<string, unknown>,
): Promise<{ service: Service; server: Server; port: number; url: string }> {
  const options = validateOptions(input as Record<string, unknown>);
  const http = createHttpServer();
  await new Promise<void>((resolve, reject) => {
    http.server.once('error', reject);
    http.server.listen(options.port, options.host, () => resolve());
  });
  try {
    const service = await createService(options);
    return { service, ...(await service.listen(options.port, options.host, http)) };
  } catch (err) {
    http.server.close();
    throw err;
  }
}
