/**
 * The service's layers import downward only (docs/architecture/service.md). `npm run lint` runs this; an
 * upward import fails it, naming the importing file and the module it reached.
 *
 * From the bottom up; a layer may import itself and any layer before it in this list.
 */
const LAYERS = [
  ['kernel', 'shared types, errors, ids, the query AST, the log: imports nothing of the service'],
  ['config', 'options (zod), read once at start'],
  ['query', 'where JSON -> AST, the in-memory matcher, regex and geo evaluation'],
  ['storage', 'the store interface, the SQL builder and the dialects'],
  ['schema', 'class schemas: cached, checked'],
  ['access', 'the pure deciders: CLP, ACL, protectedFields'],
  ['data', 'reads and the one write pipeline, events'],
  ['auth', 'who is calling: caller resolution, sessions and roles caches'],
  ['email', 'outgoing mail adapters'],
  ['redis', 'several instances: the Redis link and the event bus across instances'],
  ['logs', 'the request log lines kept for GET /logs: a ring buffer, a capped Redis stream'],
  ['users', 'the account rules: sign-up, login, sessions, MFA, mail flows'],
  ['hooks', 'webhooks: the _Hooks registry, HTTPS calls to receivers, retries, the delivery log'],
  ['cloud', 'cloud code: the module registry, functions, triggers (in-process then webhook)'],
  ['jobs', 'jobs, _JobStatus, and the scheduler of _JobSchedule rows'],
  ['files', 'file adapters (filesystem, database), uploads, downloads, the orphan report'],
  ['push', 'push sends: _PushStatus, the scheduler, APNs and FCM deliveries'],
  ['analytics', 'analytics adapters (none, store) and the event queries'],
  ['idempotency', 'X-Backend-Request-Id: repeated requests answer 159'],
  ['security', 'the Security API: viewpoints, dry runs, the impact of a permission draft'],
  ['transfer', 'export and import of a whole application (the CLI)'],
  ['live', 'realtime subscriptions: the WebSocket server, per-subscriber decisions, retention, trace'],
  ['http', 'routes: thin handlers that translate HTTP to the calls below'],
];

const layer = (name) => `^server/src/${name}/`;
/** Files directly in server/src (index.ts, cli.ts, start.ts, demo.ts) sit on top of every layer. */
const TOP = '^server/src/[^/]+\\.ts$';

const forbidden = LAYERS.map(([name, what], i) => ({
  name: `layer-${name}`,
  comment: `${name} (${what}) may import only: ${LAYERS.slice(0, i + 1)
    .map(([n]) => n)
    .join(', ')}`,
  severity: 'error',
  from: { path: layer(name) },
  to: { path: [...LAYERS.slice(i + 1).map(([n]) => layer(n)), TOP] },
}));

forbidden.push({
  name: 'access-is-pure',
  comment:
    'access/ decides from facts it is given: it never reaches the store, the schema registry or config',
  severity: 'error',
  from: { path: layer('access') },
  to: { path: [layer('storage'), layer('schema'), layer('config')] },
});

forbidden.push({
  name: 'no-circular',
  comment: 'modules of the service do not import each other in a circle',
  severity: 'error',
  from: { path: '^server/src/' },
  to: { circular: true },
});

/*
 * The console (web/src) follows bulletproof-react's layout, imports one way: shared -> features -> app.
 * Shared code (components/, hooks/, lib/) imports no feature and not the app; a feature
 * (features/<name>/) imports shared code and itself only, never another feature and not the app;
 * the app (app/: routes, providers) composes the features. What two features need lives in the
 * shared folders. No barrel files: a module is imported by its own path, never through an index.
 */
const WEB = '^web/src/';
const WEB_SHARED = `${WEB}(components|hooks|lib)/`;

forbidden.push(
  {
    name: 'web-feature-imports-another-feature',
    comment:
      'a console feature imports no other feature: move what both need to web/src/components, hooks or lib',
    severity: 'error',
    from: { path: `${WEB}features/([^/]+)/` },
    to: { path: `${WEB}features/`, pathNot: `${WEB}features/$1/` },
  },
  {
    name: 'web-shared-imports-a-feature',
    comment: 'shared console code (components, hooks, lib) imports no feature and not the app',
    severity: 'error',
    from: { path: WEB_SHARED },
    to: { path: `${WEB}(features|app)/` },
  },
  {
    name: 'web-feature-imports-the-app',
    comment: 'a console feature does not import the app (routes, providers): the app composes the features',
    severity: 'error',
    from: { path: `${WEB}features/` },
    to: { path: `${WEB}app/` },
  },
  {
    name: 'web-no-barrel-files',
    comment: 'no barrel files in the console: import a module by its own path, not through an index',
    severity: 'error',
    from: { path: WEB },
    to: { path: `${WEB}.*index\\.tsx?$`, pathNot: `[^/]index\\.tsx?$` },
  },
  {
    name: 'no-circular-console',
    comment: 'modules of the bff and of the console do not import each other in a circle',
    severity: 'error',
    from: { path: '^(bff|web)/src/' },
    to: { circular: true },
  },
);

/*
 * The client library (client/src, the protocol included): its modules do not import each other in
 * a circle either; a service, the realtime connection or a record depends on a small interface of
 * what it needs from a client (the request core, realtime/host.ts), not on the Client class.
 */
forbidden.push({
  name: 'no-circular-client',
  comment: 'modules of the client library do not import each other in a circle',
  severity: 'error',
  from: { path: '^client/src/' },
  to: { circular: true },
});

module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '(^|/)node_modules/' },
  },
};
