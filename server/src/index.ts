import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { type ServiceOptions, type ServiceOptionsInput, validateOptions } from './config/options.ts';
import type { Core } from './data/core.ts';
import { Records } from './data/records.ts';
import { createMailAdapter } from './email/adapter.ts';
import { type AppState, buildApp, createHandler } from './http/app.ts';
import { Router } from './http/router.ts';
import { accountPages } from './http/routes/account-pages.ts';
import { registerBatchRoute } from './http/routes/batch.ts';
import { registerClassRoutes } from './http/routes/classes.ts';
import { registerConfigRoutes } from './http/routes/config.ts';
import { registerEmailRoutes } from './http/routes/email.ts';
import { registerMiscRoutes } from './http/routes/misc.ts';
import { registerSchemaRoutes } from './http/routes/schemas.ts';
import { registerUserRoutes } from './http/routes/users.ts';
import { SchemaRegistry } from './schema/registry.ts';
import { openSqliteStore } from './storage/sqlite/index.ts';
import { Users } from './users/service.ts';

export type { ServiceOptions, ServiceOptionsInput } from './config/options.ts';
export { loadOptions, OptionError, validateOptions } from './config/options.ts';
export { BdsError, ErrorCode } from './errors.ts';

export interface Service {
  /** Mountable Express app: `parent.use('/api', service.app)`. */
  app: express.Express;
  options: ServiceOptions;
  core: Core;
  /** Starts an HTTP server with the app at the mount path; port 0 picks a free one. */
  listen(port?: number, host?: string): Promise<{ server: Server; port: number; url: string }>;
  /** Stops accepting requests, waits for in-flight ones (up to shutdownGraceMs), then closes the store. */
  close(): Promise<void>;
}

const UNEXPECTED = JSON.stringify({ code: 1, error: 'Internal server error.' });

export async function createService(input: ServiceOptionsInput | Record<string, unknown>): Promise<Service> {
  const options = validateOptions(input as Record<string, unknown>);
  const store = await openSqliteStore(options.dataDir);
  const schemas = new SchemaRegistry(store);
  await schemas.load();
  const core: Core = { options, store, schemas };
  const state: AppState = { ready: false, inFlight: 0 };
  let publicUrl = options.serverURL ?? `http://localhost:${options.port}${options.mountPath}`;

  const router = new Router();
  const records = new Records(core);
  const mailer = createMailAdapter(options);
  const users = new Users(core, records, mailer, () => publicUrl);
  await users.init();
  state.pages = accountPages(users, options.appId);
  // Before the class routes: /users, /classes/_User, /sessions and /classes/_Session get the user rules.
  registerUserRoutes(router, users, records, () => publicUrl);
  registerEmailRoutes(router, options.dataDir);
  registerClassRoutes(router, records, () => publicUrl);
  registerSchemaRoutes(router, core);
  registerConfigRoutes(router, core);
  registerBatchRoute(router, core);
  registerMiscRoutes(router);

  const app = buildApp(core, router, state);
  const handler = createHandler(core, router, state);
  state.ready = true;
  let server: Server | undefined;
  let closing: Promise<void> | undefined;

  const service: Service = {
    app,
    options,
    core,
    async listen(port = options.port, host = options.host) {
      const root = express();
      root.disable('x-powered-by');
      root.use(options.mountPath, app);
      root.get('/health', (_req, res) => {
        res.json({ status: state.ready ? 'ok' : 'starting' });
      });
      // Requests under the mount path skip Express (which costs more CPU than a primary-key read)
      // and go straight to the handler, with the mount path stripped as Express would; anything
      // else, including other spellings of the mount path, still goes through `root`.
      const mount = options.mountPath.replace(/\/+$/, '');
      server = createServer((req, res) => {
        const url = req.url ?? '/';
        const rest = url.startsWith(mount) ? url.slice(mount.length) : undefined;
        if (rest === undefined || (rest !== '' && rest[0] !== '/' && rest[0] !== '?')) {
          root(req, res);
          return;
        }
        req.url = rest[0] === '/' ? rest : `/${rest}`;
        handler(req, res).catch((err: unknown) => {
          console.error('[bds] unexpected error:', err instanceof Error ? err.stack : String(err));
          if (res.headersSent) res.destroy();
          else res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' }).end(UNEXPECTED);
        });
      });
      server.keepAliveTimeout = 65_000;
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(port, host, () => resolve());
      });
      const actual = (server.address() as AddressInfo).port;
      const url = `http://127.0.0.1:${actual}${options.mountPath}`;
      if (!options.serverURL) publicUrl = `http://localhost:${actual}${options.mountPath}`;
      return { server, port: actual, url };
    },
    close() {
      closing ??= (async () => {
        state.ready = false;
        if (server) {
          const stopped = new Promise<void>((resolve) => server!.close(() => resolve()));
          server.closeIdleConnections();
          const deadline = Date.now() + options.shutdownGraceMs;
          while (state.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
          server.closeAllConnections();
          await stopped;
        } else {
          const deadline = Date.now() + options.shutdownGraceMs;
          while (state.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        }
        await users.idle();
        await mailer.close?.();
        await store.close();
      })();
      return closing;
    },
  };
  return service;
}
