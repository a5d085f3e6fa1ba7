import { randomBytes } from 'node:crypto';
import type { Server, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { main as startService } from '../../server/src/cli.ts';
import { seedDemoData } from '../../server/src/demo.ts';
import { optionsOrExit } from './cli.ts';
import { readUsersFile, USERS_FILE, type UsersFile, usersFileOf, writeUsersFile } from './console-users.ts';
import { type Bff, createBff } from './index.ts';
import { type ConsoleUserConfig, OptionError, validateBffOptions } from './options.ts';
import { hashPassword } from './passwords.ts';

/**
 * `npm start`: the service (port 1337, the service's BDS_* env, demo data) and the console's bff
 * (port 4040, BDS_CONSOLE_PORT) pointing at it, in one process. Console users live in
 * <dataDir>/console-users.json, written on first start: the admin named by BDS_CONSOLE_USER +
 * BDS_CONSOLE_PASSWORD, else a demo user with a generated password (kept there to be printed).
 * The bff follows that file while it runs (`npm run console:user` changes it).
 */
export { USERS_FILE };

/** The users file, with the first admin written into it when it has none yet. */
async function consoleUsers(dataDir: string): Promise<UsersFile> {
  const file = usersFileOf(dataDir);
  const envUser = process.env.BDS_CONSOLE_USER;
  const envPassword = process.env.BDS_CONSOLE_PASSWORD;
  const stored = optionsOrExit(() => {
    try {
      return readUsersFile(file);
    } catch (err) {
      throw new OptionError(USERS_FILE, (err as Error).message);
    }
  });
  if (stored && (!envUser || stored.consoleUsers.some((u) => u.username === envUser))) return stored;
  let users: UsersFile;
  if (envUser && envPassword) {
    const admin: ConsoleUserConfig = {
      username: envUser,
      passwordHash: await hashPassword(envPassword),
      role: 'admin',
    };
    // The env admin replaces the generated demo user; other users are kept.
    const kept = (stored?.consoleUsers ?? []).filter((u) => u.username !== stored?.demoLogin?.username);
    users = { consoleUsers: [admin, ...kept] };
  } else if (stored) {
    return stored;
  } else {
    const password = randomBytes(12).toString('base64url');
    users = {
      consoleUsers: [{ username: 'demo', passwordHash: await hashPassword(password), role: 'admin' }],
      demoLogin: { username: 'demo', password },
    };
  }
  writeUsersFile(file, users);
  return users;
}

/** The demo cloud module (a function, a trigger and a job), unless BDS_CLOUD or a config file chooses. */
const DEMO_CLOUD = fileURLToPath(new URL('../../server/src/demo-cloud.ts', import.meta.url));
const argv = process.argv.slice(2);
const ownConfig = Boolean(process.env.BDS_CLOUD || process.env.BDS_CONFIG || argv.includes('--config'));
const SIGNALS = ['SIGTERM', 'SIGINT'] as const;
const theirs = new Map(SIGNALS.map((signal) => [signal, process.listeners(signal)]));
const service = await startService(argv, ownConfig ? {} : { cloud: DEMO_CLOUD });
// The service's own CLI closes it on a signal; here the bff must drain first (its requests call
// the service), so one shutdown below replaces that handler.
for (const signal of SIGNALS)
  for (const listener of process.listeners(signal))
    if (!theirs.get(signal)!.includes(listener)) process.off(signal, listener);
let bff: Bff | undefined;
let bffServer: Server | undefined;
let stopping: Promise<void> | undefined;
/** The bff's answers under way: once stopping, each ends its connection (no keep-alive reuse). */
const answering = new Set<ServerResponse>();
const lastOnConnection = (res: ServerResponse) => {
  if (!res.headersSent) res.setHeader('Connection', 'close');
};
/**
 * SIGTERM/SIGINT: the bff stops accepting and finishes its in-flight requests (cut after the
 * service's shutdown grace), then the service drains and closes its store, then the process exits.
 */
function shutdown(signal: string): Promise<void> {
  stopping ??= (async () => {
    const closing = bff?.close() ?? Promise.resolve();
    console.log(`[bds] ${signal}: console stopped accepting, draining in-flight requests`);
    for (const res of answering) lastOnConnection(res);
    // A connection whose answer was already under way goes once idle; the rest at the deadline.
    const idle = setInterval(() => bffServer?.closeIdleConnections(), 50);
    const cut = setTimeout(() => bffServer?.closeAllConnections(), service.options.shutdownGraceMs);
    await closing;
    clearInterval(idle);
    clearTimeout(cut);
    console.log('[bds] console closed; draining the service');
    await service.close();
    console.log('[bds] store closed');
    process.exit(0);
  })().catch((err: unknown) => {
    console.error('[bds] shutdown failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
  return stopping;
}
for (const signal of SIGNALS) process.once(signal, () => void shutdown(signal));
if (await seedDemoData(service)) console.log('[bds] demo data written: classes Author and Post');
const { options: so } = service;
const users = await consoleUsers(so.dataDir);
const options = optionsOrExit(() =>
  validateBffOptions({
    port: process.env.BDS_CONSOLE_PORT ?? 4040,
    host: process.env.BDS_CONSOLE_HOST ?? '127.0.0.1',
    dataDir: so.dataDir,
    sessionSecret: process.env.BDS_CONSOLE_SESSION_SECRET,
    apps: [
      {
        id: so.appId,
        name: so.appId,
        serverURL: `http://127.0.0.1:${so.port}${so.mountPath}`,
        appId: so.appId,
        masterKey: so.masterKey,
        restAPIKey: so.restAPIKey,
        javascriptKey: so.javascriptKey,
        clientKey: so.clientKey,
        webhookKey: so.webhookKey,
      },
    ],
  }),
);
// The bff reads its console users from <dataDir>/console-users.json itself, and follows it.
bff = await createBff(options).catch((err: unknown) =>
  optionsOrExit<Bff>(() => {
    throw err;
  }),
);
const listening = await bff.listen();
bffServer = listening.server;
bffServer.on('request', (_req, res: ServerResponse) => {
  if (stopping) return lastOnConnection(res);
  answering.add(res);
  res.once('close', () => answering.delete(res));
});
// A signal while the bff was starting: close it at once.
if (stopping) await bff.close();
const url = listening.url.replace('127.0.0.1', 'localhost');
console.log(`[bds] console: ${url}`);
if (users.demoLogin) {
  console.log(`[bds] console login: ${users.demoLogin.username} / ${users.demoLogin.password}`);
  console.log(`        (demo user kept in ${path.join(so.dataDir, USERS_FILE)}; BDS_CONSOLE_USER and`);
  console.log('        BDS_CONSOLE_PASSWORD define your own admin instead)');
} else {
  const names = users.consoleUsers.map((u) => u.username).join(', ');
  console.log(`[bds] console login: ${names} (users in ${path.join(so.dataDir, USERS_FILE)})`);
}
