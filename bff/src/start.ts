import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { main as startService } from '../../server/src/cli.ts';
import { seedDemoData } from '../../server/src/demo.ts';
import { optionsOrExit, runBff } from './cli.ts';
import { type ConsoleUserConfig, validateBffOptions } from './options.ts';
import { hashPassword } from './passwords.ts';

/**
 * `npm start`: the service (port 1337, the service's BDS_* env, demo data) and the console's bff
 * (port 4040, BDS_CONSOLE_PORT) pointing at it, in one process. Console users live in
 * <dataDir>/console-users.json, written on first start: the admin named by BDS_CONSOLE_USER +
 * BDS_CONSOLE_PASSWORD, else a demo user with a generated password (kept there to be printed).
 */
export const USERS_FILE = 'console-users.json';

interface UsersFile {
  consoleUsers: ConsoleUserConfig[];
  /** Only for the generated demo user, printed at every start. */
  demoLogin?: { username: string; password: string };
}

async function consoleUsers(dataDir: string): Promise<UsersFile> {
  const file = path.join(dataDir, USERS_FILE);
  const envUser = process.env.BDS_CONSOLE_USER;
  const envPassword = process.env.BDS_CONSOLE_PASSWORD;
  let stored: UsersFile | undefined;
  if (existsSync(file)) stored = JSON.parse(readFileSync(file, 'utf8')) as UsersFile;
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
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, `${JSON.stringify(users, null, 2)}\n`, { mode: 0o600 });
  return users;
}

/** The demo cloud module (a function, a trigger and a job), unless BDS_CLOUD or a config file chooses. */
const DEMO_CLOUD = fileURLToPath(new URL('../../server/src/demo-cloud.ts', import.meta.url));
const argv = process.argv.slice(2);
const ownConfig = Boolean(process.env.BDS_CLOUD || process.env.BDS_CONFIG || argv.includes('--config'));
const service = await startService(argv, ownConfig ? {} : { cloud: DEMO_CLOUD });
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
    consoleUsers: users.consoleUsers,
  }),
);
const { url } = await runBff(options);
console.log(`[bds] console: ${url}`);
if (users.demoLogin) {
  console.log(`[bds] console login: ${users.demoLogin.username} / ${users.demoLogin.password}`);
  console.log(`        (demo user kept in ${path.join(so.dataDir, USERS_FILE)}; BDS_CONSOLE_USER and`);
  console.log('        BDS_CONSOLE_PASSWORD define your own admin instead)');
} else {
  const names = users.consoleUsers.map((u) => u.username).join(', ');
  console.log(`[bds] console login: ${names} (users in ${path.join(so.dataDir, USERS_FILE)})`);
}
