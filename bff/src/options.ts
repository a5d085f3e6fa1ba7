import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** A bad option: the message names it (`option "apps.0.serverURL": ...`). The CLI exits with 2. */
export class OptionError extends Error {
  constructor(
    readonly option: string,
    detail: string,
  ) {
    super(`option "${option}": ${detail}`);
    this.name = 'OptionError';
  }
}

/** What an app's id and an import source's name may be (they appear in the console's paths). */
const CONSOLE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const CONSOLE_NAME_RULE = 'must be 1-64 letters, digits, "_" or "-"';

/**
 * A running parse-server an app may import from (docs/transfer.md, "From the console"). Its master
 * key and database URL stay in the bff: the console picks a source by name and never sees them.
 */
const parseSourceSchema = z.strictObject({
  name: z.string().regex(CONSOLE_NAME, CONSOLE_NAME_RULE),
  serverURL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  appId: z.string().min(1),
  masterKey: z.string().min(1),
  /** postgres://… of its database, for its users' password hashes and relation tables. */
  postgresURL: z.string().min(1).optional(),
});

const appSchema = z.strictObject({
  id: z.string().regex(CONSOLE_NAME, CONSOLE_NAME_RULE),
  name: z.string().min(1).optional(),
  /** Base URL of the service including its mount path, e.g. http://localhost:1337/api */
  serverURL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  appId: z.string().min(1),
  masterKey: z.string().min(8, 'must be at least 8 characters'),
  restAPIKey: z.string().min(1).optional(),
  javascriptKey: z.string().min(1).optional(),
  clientKey: z.string().min(1).optional(),
  webhookKey: z.string().min(1).optional(),
  parseSources: z.array(parseSourceSchema).default([]),
});

/** One console user entry, as the config file holds it and `console:user add` prints it. */
export const consoleUserSchema = z.strictObject({
  username: z.string().regex(/^[A-Za-z0-9_.@-]{1,64}$/, 'must be 1-64 letters, digits, "_", ".", "@" or "-"'),
  passwordHash: z.string().regex(/^scrypt\$\d+\$\d+\$\d+\$[\w-]+\$[\w-]+$/, 'must be a scrypt hash'),
  role: z.enum(['admin', 'read-only']),
  apps: z.array(z.string().min(1)).optional(),
  mfaSecret: z
    .string()
    .regex(/^[A-Z2-7]{16,}=*$/, 'must be a base32 TOTP secret')
    .optional(),
});

/**
 * What a list of console users may not hold, wherever it comes from (the options or the data
 * dir's users file): a username twice, or an app the console does not have.
 */
export function consoleUserProblems(
  users: ConsoleUserConfig[],
  appIds: ReadonlySet<string>,
): Array<{ path: (string | number)[]; message: string }> {
  const problems: Array<{ path: (string | number)[]; message: string }> = [];
  const names = new Set<string>();
  users.forEach((user, i) => {
    if (names.has(user.username)) problems.push({ path: [i, 'username'], message: 'is a duplicate' });
    names.add(user.username);
    user.apps?.forEach((id, j) => {
      if (!appIds.has(id)) problems.push({ path: [i, 'apps', j], message: `unknown app "${id}"` });
    });
  });
  return problems;
}

const optionsSchema = z
  .strictObject({
    port: z.coerce.number().int().min(0).max(65535).default(4040),
    host: z.string().min(1).default('127.0.0.1'),
    dataDir: z.string().min(1).default('./data'),
    apps: z.array(appSchema).min(1, 'at least one app is required'),
    consoleUsers: z.array(consoleUserSchema).default([]),
    /** iron-session password; absent: generated once into <dataDir>/console-session-secret (0600). */
    sessionSecret: z.string().min(32, 'must be at least 32 characters').optional(),
    /** A session ends after this long without a request. */
    idleTimeoutSeconds: z.coerce
      .number()
      .int()
      .positive()
      .default(30 * 60),
    /** A session ends this long after login, whatever the activity. */
    absoluteTimeoutSeconds: z.coerce
      .number()
      .int()
      .positive()
      .default(12 * 60 * 60),
    /** `auto`: Secure cookies except when the console is reached on localhost. */
    secureCookies: z.union([z.boolean(), z.literal('auto')]).default('auto'),
    loginThrottle: z
      .strictObject({
        /** Failures allowed (per IP and per username) before the backoff starts. */
        freeAttempts: z.number().int().min(0).default(5),
        baseDelaySeconds: z.number().positive().default(1),
        maxDelaySeconds: z
          .number()
          .positive()
          .default(15 * 60),
      })
      .prefault({}),
    /** Directory of the built SPA; default web/dist of this workspace. */
    webDist: z.string().min(1).optional(),
    /** Express `trust proxy` setting, for the client IP behind a reverse proxy. */
    trustProxy: z.union([z.boolean(), z.number(), z.string()]).default(false),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .superRefine((o, ctx) => {
    const ids = new Set<string>();
    o.apps.forEach((app, i) => {
      if (ids.has(app.id))
        ctx.addIssue({ code: 'custom', path: ['apps', i, 'id'], message: 'is a duplicate' });
      ids.add(app.id);
      const sources = new Set<string>();
      app.parseSources.forEach((source, j) => {
        if (sources.has(source.name))
          ctx.addIssue({
            code: 'custom',
            path: ['apps', i, 'parseSources', j, 'name'],
            message: 'is a duplicate',
          });
        sources.add(source.name);
      });
    });
    for (const problem of consoleUserProblems(o.consoleUsers, ids)) {
      ctx.addIssue({ code: 'custom', path: ['consoleUsers', ...problem.path], message: problem.message });
    }
    if (o.absoluteTimeoutSeconds < o.idleTimeoutSeconds) {
      ctx.addIssue({
        code: 'custom',
        path: ['absoluteTimeoutSeconds'],
        message: 'must not be shorter than idleTimeoutSeconds',
      });
    }
  });

export type BffOptionsInput = z.input<typeof optionsSchema>;
export type BffOptions = z.output<typeof optionsSchema>;
export type AppConfig = z.output<typeof appSchema>;
export type ParseSourceConfig = z.output<typeof parseSourceSchema>;
export type ConsoleUserConfig = z.output<typeof consoleUserSchema>;

/** Validates options; throws an OptionError naming the first bad option. */
export function validateBffOptions(input: unknown): BffOptions {
  const parsed = optionsSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const name = issue.path.length ? issue.path.join('.') : '(options)';
  let detail = issue.message;
  if (issue.code === 'unrecognized_keys') {
    return fail(issue.path.concat(issue.keys[0] ?? '').join('.'), 'is not a known option');
  }
  if (issue.code === 'invalid_type' && issue.input === undefined) detail = 'is required';
  return fail(name, detail);
}

function fail(name: string, detail: string): never {
  throw new OptionError(name, detail);
}

/**
 * Options from env and an optional JSON config file (`BDS_CONSOLE_CONFIG`, several apps and the
 * console users); env wins for scalar options. One app can come from env alone:
 * `BDS_SERVER_URL` + `BDS_APP_ID` + `BDS_MASTER_KEY` (+ `BDS_REST_API_KEY`, `BDS_JAVASCRIPT_KEY`,
 * `BDS_CLIENT_KEY`, `BDS_WEBHOOK_KEY`, `BDS_APP_NAME`).
 */
export function loadBffOptions(
  env: NodeJS.ProcessEnv = process.env,
  configFile = env.BDS_CONSOLE_CONFIG,
  extra: Record<string, unknown> = {},
): BffOptions {
  let file: Record<string, unknown> = {};
  if (configFile) {
    let text: string;
    try {
      text = readFileSync(configFile, 'utf8');
    } catch (err) {
      throw new OptionError('BDS_CONSOLE_CONFIG', `cannot read ${configFile}: ${(err as Error).message}`);
    }
    try {
      file = JSON.parse(text);
    } catch (err) {
      throw new OptionError(
        'BDS_CONSOLE_CONFIG',
        `${configFile} is not valid JSON: ${(err as Error).message}`,
      );
    }
    if (!file || typeof file !== 'object' || Array.isArray(file)) {
      throw new OptionError('BDS_CONSOLE_CONFIG', `${configFile} must hold a JSON object`);
    }
  }
  const merged: Record<string, unknown> = { ...file };
  if (env.BDS_CONSOLE_PORT) merged.port = env.BDS_CONSOLE_PORT;
  if (env.BDS_CONSOLE_HOST) merged.host = env.BDS_CONSOLE_HOST;
  if (env.BDS_DATA_DIR) merged.dataDir = env.BDS_DATA_DIR;
  if (env.BDS_CONSOLE_SESSION_SECRET) merged.sessionSecret = env.BDS_CONSOLE_SESSION_SECRET;
  if (env.BDS_SERVER_URL || env.BDS_MASTER_KEY) {
    const appId = env.BDS_APP_ID;
    const fromEnv = {
      id: appId,
      name: env.BDS_APP_NAME,
      serverURL: env.BDS_SERVER_URL,
      appId,
      masterKey: env.BDS_MASTER_KEY,
      restAPIKey: env.BDS_REST_API_KEY,
      javascriptKey: env.BDS_JAVASCRIPT_KEY,
      clientKey: env.BDS_CLIENT_KEY,
      webhookKey: env.BDS_WEBHOOK_KEY,
    };
    for (const [k, v] of Object.entries(fromEnv)) if (v === undefined) delete (fromEnv as any)[k];
    const apps = Array.isArray(merged.apps) ? merged.apps : [];
    merged.apps = [fromEnv, ...apps.filter((a) => (a as { id?: string })?.id !== appId)];
  }
  return validateBffOptions({ ...merged, ...extra });
}
