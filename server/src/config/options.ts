import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isObject } from '@bds/client/protocol';
import { z } from 'zod';
import { trustListProblem } from '../kernel/client-address.ts';
import { randomSecret } from '../kernel/ids.ts';
import { LOG_LEVELS } from '../kernel/log.ts';
import { accountLockoutSchema, authSchema, emailSchema } from './account-options.ts';
import { HISTORY_DEFAULTS, historySchema } from './history-options.ts';
import { hooksSchema } from './hook-options.ts';
import { JOBS_DEFAULTS, jobsSchema } from './job-options.ts';
import { byteSize, secret } from './option-values.ts';
import { AUTO_INDEX_DEFAULTS, autoIndexSchema } from './performance-options.ts';
import { pushSchema } from './push-options.ts';
import { LIVE_QUERY_DEFAULTS, liveQuerySchema } from './realtime-options.ts';
import {
  DEFAULT_RATE_LIMITS,
  idempotencySchema,
  rateLimitSchema,
  requestComplexitySchema,
} from './request-options.ts';

/** The rule of provider names, where the account rules (users/providers.ts) and cloud code import the options. */
export { providerNameProblem } from './account-options.ts';

const TRUST_PROXY = 'must be true, false, a number of trusted hops or a list of trusted proxy addresses.';

/**
 * The one table of the service's options, in the order the options view shows them: each option
 * with its default and description. The object options of one area are declared beside it
 * (account-options.ts, hook-options.ts, push-options.ts, realtime-options.ts, request-options.ts)
 * and named here. docs/protocol.md lists every option of this table.
 */
export const optionsSchema = z
  .object({
    appId: z
      .string()
      .min(1)
      .describe('The application id every request names (public: client builds carry it).'),
    masterKey: secret(z.string().min(8, 'must be at least 8 characters')).describe(
      'The key that bypasses ACL, class-level permissions and protectedFields.',
    ),
    restAPIKey: secret(z.string().min(1))
      .optional()
      .describe('The REST API key of client apps (and realtime).'),
    javascriptKey: secret(z.string().min(1)).optional().describe('The key of browser clients.'),
    clientKey: secret(z.string().min(1)).optional().describe('The key of mobile clients.'),
    webhookKey: secret(z.string().min(1))
      .optional()
      .describe('The key the service sends to webhook receivers, so they know a call is its own.'),
    port: z.number().int().min(0).max(65535).default(1337).describe('The TCP port the service listens on.'),
    host: z
      .string()
      .default('0.0.0.0')
      .describe('The address the service listens on (0.0.0.0: every interface).'),
    mountPath: z
      .string()
      .regex(/^\/[A-Za-z0-9_\-/]*$/, 'must start with / and contain only letters, digits, _, - and /')
      .default('/api')
      .describe('The path of the REST API on the HTTP server.'),
    dataDir: z
      .string()
      .min(1)
      .default('./data')
      .describe(
        'Where the service keeps its files: the SQLite store, uploads, the dev mailbox, generated keys.',
      ),
    databaseURI: secret(
      z
        .string()
        .regex(
          /^(sqlite:.+|postgres(ql)?:\/\/.+)$/,
          'must be sqlite:<path to a file> (the embedded store) or postgres://<user>@<host>/<database>',
        ),
      'url',
    )
      .optional()
      .describe(
        'Where records live: a SQLite file (`sqlite:<path>`, or `sqlite::memory:`), by default ' +
          '`<dataDir>/data.sqlite`, or a PostgreSQL database (`postgres://` or `postgresql://`, for ' +
          'several instances). The scheme chooses the store.',
      ),
    databasePoolSize: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(10)
      .describe('Most connections to PostgreSQL per instance (the PostgreSQL store only).'),
    redisURL: secret(
      z.string().regex(/^rediss?:\/\/.+$/, 'must be redis://<host>:<port> or rediss://<host>:<port>'),
      'url',
    )
      .optional()
      .describe(
        'Redis, for several instances of the service (`redis://[user:password@]host:port[/db]`, or ' +
          '`rediss://` for TLS): write events reach every instance, and login throttles, lockout, rate ' +
          'limits and scheduled ticks are shared. Without it nothing needs Redis.',
      ),
    redis: z
      .object({
        keyPrefix: z
          .string()
          .min(1)
          .max(200)
          .optional()
          .describe('The prefix of every key (default `bds:<appId>:`).'),
        streamMaxLen: z
          .number()
          .int()
          .min(100)
          .max(10_000_000)
          .default(100_000)
          .describe(
            'Entries the event stream keeps (about): how long an instance may be away without a gap.',
          ),
      })
      .strict()
      .default({ streamMaxLen: 100_000 })
      .describe('Only with `redisURL`: the prefix of every key, and the events kept.'),
    rateLimit: rateLimitSchema
      .default(DEFAULT_RATE_LIMITS)
      .describe(
        'Rate limits, each: `path` (a regular expression over the path below the mount path), ' +
          '`methods`, `window` (seconds), `max` requests per `by` (ip, user or session). The defaults ' +
          'limit login, sign-up, password reset and verification mail per IP; `[]` turns them off.',
      ),
    passwordHashCost: z
      .number()
      .int()
      .min(12)
      .max(17)
      .default(15)
      .describe(
        'Cost of new password hashes: scrypt with N = 2^passwordHashCost (15: 32 MiB and tens of ' +
          'milliseconds on a server core). Stored hashes keep the cost they were made with.',
      ),
    // kernel/client-address.ts
    trustProxy: z
      .union(
        [
          z.boolean(),
          z.number().int({ error: TRUST_PROXY }).min(0, { error: TRUST_PROXY }),
          z.array(z.string({ error: TRUST_PROXY })),
        ],
        { error: TRUST_PROXY },
      )
      .superRefine((value, ctx) => {
        const problem = Array.isArray(value) ? trustListProblem(value) : undefined;
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .default(false)
      .describe(
        "Where the client's address comes from: `false` the socket's; behind proxies of yours that " +
          'append to X-Forwarded-For, the number of them (hops) or a list of their addresses and ' +
          'CIDRs; `true` trusts every hop (the left-most address: only for a proxy that overwrites the header).',
      ),
    sqliteSynchronous: z
      .enum(['normal', 'full'])
      .default('normal')
      .describe(
        "SQLite's `synchronous`: `normal` (a commit is in the WAL before it is acknowledged, so a crash " +
          'of the process loses nothing; a power loss can lose the last commits) or `full` (a power loss ' +
          'loses nothing acknowledged; each commit waits for the disk).',
      ),
    // Off by default: the mapped pages of the file count in the process's resident memory (a large
    // download from the database file adapter maps its chunks), and an I/O error on a mapped file
    // stops the process with a signal instead of answering an error.
    sqliteMmapMB: z
      .number()
      .int()
      .min(0)
      .max(65536)
      .default(0)
      .describe(
        'How much of the SQLite file (MB) is read through a memory map rather than read calls: faster ' +
          'scans (unindexed finds, counts: 9-23% measured with 256). 0: off.',
      ),
    // Exact whatever writes happen (see storage/sql/row-cache.ts).
    rowCacheMB: z
      .number()
      .min(0)
      .max(65536)
      .default(64)
      .describe(
        'Memory (MB, estimated) for rows kept after a read by id, so that the next read of the same ' +
          'row skips the SQL engine; 0 turns it off. On PostgreSQL a cached row is answered after one ' +
          'shared look at the rows other instances changed (docs/architecture/storage.md).',
      ),
    autoIndex: autoIndexSchema
      .default(AUTO_INDEX_DEFAULTS)
      .describe(
        'Indexes the service builds itself for finds that scan a large class, and drops when unused ' +
          '(docs/protocol.md#performance): `enabled`, `minRows`, `minSightings` within `windowMs`, ' +
          '`maxPerClass`, `dropUnusedAfterMs`, `checkIntervalMs`.',
      ),
    history: historySchema
      .default(HISTORY_DEFAULTS)
      .describe(
        'Versions of rows, kept for the master key (docs/protocol.md#row-history): `enabled`, per-class ' +
          '`classes`, pruned past `maxAgeMs` and `maxVersionsPerRow` every `pruneIntervalMs`.',
      ),
    logLevel: z
      .enum(LOG_LEVELS)
      .default('info')
      .describe("Level of the service's log (one JSON line per request at `info`)."),
    // logs/request-logs.ts
    requestLogSize: z
      .number()
      .int()
      .min(0)
      .max(100_000)
      .default(1000)
      .describe(
        'Request log lines (with the cloud code and webhook lines of each request) kept for the ' +
          "master-only GET /logs and the console's Logs page, per instance in memory and with " +
          '`redisURL` across instances in Redis; 0 keeps none.',
      ),
    serverURL: secret(z.string().url(), 'url')
      .optional()
      .describe('Public address of the service, used in Location headers and file urls.'),
    maxLimit: z
      .number()
      .int()
      .positive()
      .default(1000)
      .describe('The most rows one find answers (a larger limit is lowered).'),
    aggregate: z
      .object({
        maxLookupMatches: z
          .number()
          .int()
          .min(1)
          .default(10_000)
          .describe('The most rows one `$lookup` joins to one document; past it the pipeline answers 102.'),
        maxSortDocuments: z
          .number()
          .int()
          .min(1)
          .default(100_000)
          .describe(
            'The most documents a `$sort` holds in memory when it cannot be sorted by the store; past it 102.',
          ),
      })
      .strict()
      .default({ maxLookupMatches: 10_000, maxSortDocuments: 100_000 })
      .describe('Bounds on what one aggregation (POST /aggregate) holds in memory.'),
    maxUploadSize: byteSize
      .default(20 * 1024 * 1024)
      .describe('The largest file an upload may carry, in bytes (the options also take "20mb").'),
    allowClientClassCreation: z
      .boolean()
      .default(false)
      .describe('Callers without the master key may create a class by writing to it.'),
    protectedFieldsOwnerExempt: z
      .boolean()
      .default(false)
      .describe('A user sees the protected fields of their own _User row.'),
    protectedFieldsSaveResponseExempt: z
      .boolean()
      .default(false)
      .describe('Write answers echo protected fields (false: stripped as on reads).'),
    sessionLength: z
      .number()
      .int()
      .positive()
      .default(365 * 24 * 3600)
      .describe('Lifetime of a session, in seconds.'),
    requestComplexity: requestComplexitySchema
      .default({
        includeDepth: 10,
        includeCount: 100,
        subqueryDepth: 10,
        queryDepth: 10,
        batchRequestLimit: 100,
      })
      .describe('Bounds on what one request may ask for (-1: no bound; the master key has none).'),
    fileUpload: z
      .object({
        enableForPublic: z
          .boolean()
          .default(false)
          .describe('Callers without a session (application keys only) may upload.'),
        enableForAnonymousUser: z.boolean().default(false).describe('Anonymous users may upload.'),
        enableForAuthenticatedUser: z.boolean().default(true).describe('Signed-in users may upload.'),
      })
      .strict()
      .default({ enableForPublic: false, enableForAnonymousUser: false, enableForAuthenticatedUser: true })
      .describe('Who may upload files (the master key always may).'),
    liveQuery: liveQuerySchema
      .default(LIVE_QUERY_DEFAULTS)
      .describe(
        'Realtime subscriptions (LiveQuery) on the service\'s own HTTP server (docs/architecture.md "Realtime").',
      ),
    verifyUserEmails: z
      .boolean()
      .default(false)
      .describe('A new or changed email gets a verification link by mail.'),
    preventLoginWithUnverifiedEmail: z
      .boolean()
      .default(false)
      .describe(
        'With verifyUserEmails: a password sign-up gets no session, a login answers 205, until the email is verified.',
      ),
    revokeSessionOnPasswordReset: z
      .boolean()
      .default(true)
      .describe("A password reset (the mailed link) or change ends the user's other sessions."),
    allowCustomObjectId: z
      .boolean()
      .default(false)
      .describe(
        'Any caller may choose the objectId of a create (`objectId` in the body); else only the master key.',
      ),
    auth: authSchema
      .default({})
      .describe(
        'Sign-in providers besides `anonymous` (built in): OpenID ID tokens checked against keys given here.',
      ),
    emailVerifyTokenValidity: z
      .number()
      .int()
      .positive()
      .default(24 * 3600)
      .describe('Lifetime of an email verification link, in seconds.'),
    passwordResetTokenValidity: z
      .number()
      .int()
      .positive()
      .default(7200)
      .describe('Lifetime of a password reset link, in seconds.'),
    accountLockout: accountLockoutSchema
      .optional()
      .describe(
        'After `threshold` failed logins for one name, logins for it are refused for `duration` seconds.',
      ),
    email: emailSchema
      .default({ adapter: 'dev', from: 'no-reply@localhost' })
      .describe('Outgoing mail: a dev mailbox in <dataDir>/mailbox (default) or SMTP.'),
    cloud: z
      .string()
      .min(1)
      .optional()
      .describe('A JS or TS module that registers cloud code (docs/protocol.md#cloud-code-module).'),
    parseCloud: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A module written for the incumbent's Parse.Cloud API, run unchanged (docs/cloud.md#cloud-code-written-for-the-incumbent).",
      ),
    hooks: hooksSchema
      .default({
        allowInsecureUrls: false,
        timeoutMs: 10_000,
        retries: 3,
        retryBackoffMs: 1000,
        deliveryLogSize: 1000,
      })
      .describe(
        'Webhooks ({hook_url}): HTTPS only unless allowInsecureUrls; calls time out; after-hooks retry.',
      ),
    jobs: jobsSchema.default({ ...JOBS_DEFAULTS }).describe('Jobs and their schedules.'),
    files: z
      .object({
        adapter: z
          .enum(['fs', 'database'])
          .default('fs')
          .describe('`fs` (under `<dataDir>/files`) or `database` (for several instances).'),
      })
      .strict()
      .default({ adapter: 'fs' })
      .describe('Where uploaded files live.'),
    push: pushSchema
      .optional()
      .describe('Push delivery: APNs (token auth) and/or FCM HTTP v1. Without it POST /push answers 115.'),
    analytics: z
      .object({
        adapter: z
          .enum(['none', 'store'])
          .default('none')
          .describe('`none` accepts and drops events; `store` keeps them, queryable by master.'),
      })
      .strict()
      .default({ adapter: 'none' })
      .describe('Analytics events.'),
    idempotency: idempotencySchema
      .optional()
      .describe(
        'Requests carrying X-Backend-Request-Id on a path matching one of `paths` run once within `ttl` seconds.',
      ),
    shutdownGraceMs: z
      .number()
      .int()
      .min(0)
      .default(10_000)
      .describe('Time a SIGTERM/close waits for in-flight requests before closing the store.'),
  })
  .strict();

export type ServiceOptions = z.output<typeof optionsSchema>;
export type ServiceOptionsInput = z.input<typeof optionsSchema>;

/** A bad option: carries the option's dotted name so the CLI can print it. */
export class OptionError extends Error {
  constructor(
    readonly option: string,
    message: string,
  ) {
    super(`Invalid option "${option}": ${message}`);
  }
}

/** Turns `{"requestComplexity.includeDepth": 3}` into `{requestComplexity: {includeDepth: 3}}`. */
export function expandDottedKeys(input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    const parts = key.split('.');
    let target = out;
    for (const part of parts.slice(0, -1)) {
      const next = target[part];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) target[part] = {};
      target = target[part] as Record<string, unknown>;
    }
    const last = parts[parts.length - 1]!;
    const existing = target[last];
    if (isObject(existing) && isObject(value)) {
      target[last] = { ...existing, ...expandDottedKeys(value) };
    } else {
      target[last] = isObject(value) ? expandDottedKeys(value) : value;
    }
  }
  return out;
}

/** Validates options; throws OptionError naming the first bad option. */
export function validateOptions(input: Record<string, unknown>): ServiceOptions {
  const result = optionsSchema.safeParse(expandDottedKeys(input));
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  let name = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') {
    name = [...issue.path, issue.keys[0]].join('.');
    throw new OptionError(name, 'unknown option');
  }
  throw new OptionError(name || '(root)', issue.message);
}

const ENV_OPTIONS: Array<[string, string, 'string' | 'number']> = [
  ['PORT', 'port', 'number'],
  ['BDS_APP_ID', 'appId', 'string'],
  ['BDS_MASTER_KEY', 'masterKey', 'string'],
  ['BDS_REST_API_KEY', 'restAPIKey', 'string'],
  ['BDS_JAVASCRIPT_KEY', 'javascriptKey', 'string'],
  ['BDS_CLIENT_KEY', 'clientKey', 'string'],
  ['BDS_WEBHOOK_KEY', 'webhookKey', 'string'],
  ['BDS_MOUNT_PATH', 'mountPath', 'string'],
  ['BDS_DATA_DIR', 'dataDir', 'string'],
  ['BDS_DATABASE_URL', 'databaseURI', 'string'],
  ['BDS_DATABASE_POOL_SIZE', 'databasePoolSize', 'number'],
  ['BDS_ROW_CACHE_MB', 'rowCacheMB', 'number'],
  ['BDS_REDIS_URL', 'redisURL', 'string'],
  ['BDS_LOG_LEVEL', 'logLevel', 'string'],
  ['BDS_REQUEST_LOG_SIZE', 'requestLogSize', 'number'],
  ['BDS_SERVER_URL', 'serverURL', 'string'],
  ['BDS_CLOUD', 'cloud', 'string'],
  ['BDS_PARSE_CLOUD', 'parseCloud', 'string'],
];

export interface LoadedOptions {
  options: ServiceOptions;
  /** Keys generated on this start (printed once by the CLI). */
  generatedKeys: boolean;
  keysFile?: string;
}

/**
 * Options for the CLI: the JSON file (--config or BDS_CONFIG), then env on top.
 * In development, missing keys are generated once and kept in the data dir.
 */
export function loadOptions(
  env: NodeJS.ProcessEnv,
  configFile: string | undefined,
  extra: Record<string, unknown> = {},
): LoadedOptions {
  let fileOptions: Record<string, unknown> = {};
  const file = configFile ?? env.BDS_CONFIG;
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new OptionError('config', `cannot read ${file}: ${(err as Error).message}`);
    }
    try {
      const parsed = JSON.parse(text);
      if (!isObject(parsed)) throw new Error('the file must hold a JSON object');
      fileOptions = expandDottedKeys(parsed);
    } catch (err) {
      throw new OptionError('config', `${file} is not valid: ${(err as Error).message}`);
    }
  }
  const merged: Record<string, unknown> = { ...fileOptions, ...extra };
  for (const [envName, option, kind] of ENV_OPTIONS) {
    const raw = env[envName];
    if (raw === undefined || raw === '') continue;
    if (kind === 'number') {
      const n = Number(raw);
      if (!Number.isInteger(n)) throw new OptionError(option, `${envName} must be an integer, got "${raw}"`);
      merged[option] = n;
    } else {
      merged[option] = raw;
    }
  }

  let generatedKeys = false;
  let keysFile: string | undefined;
  const production = env.NODE_ENV === 'production';
  if (!merged.masterKey || !merged.appId) {
    if (production) {
      throw new OptionError(merged.appId ? 'masterKey' : 'appId', 'is required when NODE_ENV=production');
    }
    const dataDir = String(merged.dataDir ?? './data');
    keysFile = path.join(dataDir, 'keys.json');
    let stored: Record<string, string> = {};
    if (existsSync(keysFile)) {
      stored = JSON.parse(readFileSync(keysFile, 'utf8'));
    } else {
      stored = {
        appId: 'bds-dev',
        masterKey: randomSecret(),
        restAPIKey: randomSecret(),
        javascriptKey: randomSecret(),
      };
      mkdirSync(dataDir, { recursive: true });
      writeFileSync(keysFile, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
      generatedKeys = true;
    }
    for (const [k, v] of Object.entries(stored)) if (merged[k] === undefined) merged[k] = v;
  }
  return { options: validateOptions(merged), generatedKeys, keysFile };
}
