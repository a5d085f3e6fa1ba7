/**
 * The service's layers import downward only (docs/architecture.md). `npm run lint` runs this; an
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
  ['users', 'the account rules: sign-up, login, sessions, MFA, mail flows'],
  ['hooks', 'webhooks: the _Hooks registry, HTTPS calls to receivers, retries, the delivery log'],
  ['cloud', 'cloud code: the module registry, functions, triggers (in-process then webhook)'],
  ['jobs', 'jobs, _JobStatus, and the scheduler of _JobSchedule rows'],
  ['files', 'file adapters (filesystem, database), uploads, downloads, the orphan report'],
  ['push', 'push sends: _PushStatus, the scheduler, APNs and FCM deliveries'],
  ['analytics', 'analytics adapters (none, store) and the event queries'],
  ['idempotency', 'X-Backend-Request-Id: repeated requests answer 159'],
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

module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '(^|/)node_modules/' },
  },
};
