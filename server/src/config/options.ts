import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isObject } from '@bds/client/protocol';
import { z } from 'zod';
import { trustListProblem } from '../kernel/client-address.ts';
import { randomSecret } from '../kernel/ids.ts';
import { LOG_LEVELS } from '../kernel/log.ts';

/**
 * How the master-only options view (config/options-view.ts, GET /serverInfo/options) shows an
 * option that holds a credential: `hidden` (only whether it is set), `url` (the address without
 * its password or secret parameters), `publicKeys` (each key's id and SHA-256 digest, never key text).
 */
export type SecretKind = 'hidden' | 'url' | 'publicKeys';

/** The one mark of a secret option, set where the option is declared; the options view reads it. */
export const secretOptions = z.registry<{ secret: SecretKind }>();

function secret<T extends z.ZodType>(schema: T, kind: SecretKind = 'hidden'): T {
  secretOptions.add(schema, { secret: kind });
  return schema;
}

const limit = z.number().int().min(-1);

function isRegExp(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

const TRUST_PROXY = 'must be true, false, a number of trusted hops or a list of trusted proxy addresses.';

/**
 * Per IP: password checks (login, verifyPassword: one counter) and sign-ups 30 a minute, password
 * reset and verification mail 5 a minute.
 */
const DEFAULT_RATE_LIMITS = [
  {
    path: '^/(login|verifyPassword)$',
    methods: ['GET', 'POST'] as const,
    window: 60,
    max: 30,
    by: 'ip' as const,
  },
  { path: '^/(users|classes/_User)$', methods: ['POST'] as const, window: 60, max: 30, by: 'ip' as const },
  {
    path: '^/(requestPasswordReset|verificationEmailRequest)$',
    methods: ['POST'] as const,
    window: 60,
    max: 5,
    by: 'ip' as const,
  },
].map((rule) => ({ ...rule, methods: [...rule.methods] }));

const requestComplexitySchema = z
  .object({
    includeDepth: limit.default(10).describe('Deepest include path (a.b.c is 3).'),
    includeCount: limit.default(100).describe('Most include paths in one query.'),
    subqueryDepth: limit
      .default(10)
      .describe('Deepest nesting of subqueries ($inQuery, $select and the like).'),
    queryDepth: limit.default(10).describe('Deepest nesting of $and, $or and $nor.'),
    batchRequestLimit: limit.default(100).describe('Most requests in one batch.'),
  })
  .strict();

const byteSize = z.union([
  z.number().int().positive(),
  z
    .string()
    .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i, 'must be a size such as "20mb"')
    .transform(parseByteSize),
]);

const pathPattern = z.string().refine((source) => {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}, 'must be a valid regular expression');

const LIVE_QUERY_DEFAULTS = {
  path: '/live',
  classNames: ['*'],
  maxSubscriptionsPerConnection: 100,
  maxFrameBytes: 64 * 1024,
  retentionMs: 5 * 60 * 1000,
  retentionMaxEvents: 10_000,
  pingIntervalMs: 30_000,
  idleTimeoutMs: 10 * 60 * 1000,
  traceSize: 100,
};

const liveQuerySchema = z
  .object({
    path: z
      .string()
      .regex(/^\/[\w\-./]*$/, 'must be a path starting with /')
      .default(LIVE_QUERY_DEFAULTS.path)
      .describe(
        "The WebSocket path on the service's HTTP server, at the server's root (PROTOCOL {live_url}).",
      ),
    classNames: z
      .array(z.string().min(1))
      .default(LIVE_QUERY_DEFAULTS.classNames)
      .describe('Classes open to subscriptions; ["*"] for all, [] turns realtime off.'),
    maxSubscriptionsPerConnection: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(LIVE_QUERY_DEFAULTS.maxSubscriptionsPerConnection)
      .describe('Most subscriptions one connection may hold.'),
    maxFrameBytes: z
      .number()
      .int()
      .min(256)
      .max(16 * 1024 * 1024)
      .default(LIVE_QUERY_DEFAULTS.maxFrameBytes)
      .describe('Largest client frame answered; a bigger one answers 155 (16x bigger closes the socket).'),
    retentionMs: z
      .number()
      .int()
      .min(0)
      .default(LIVE_QUERY_DEFAULTS.retentionMs)
      .describe('How long events are kept for `since` resumption.'),
    retentionMaxEvents: z
      .number()
      .int()
      .min(0)
      .max(1_000_000)
      .default(LIVE_QUERY_DEFAULTS.retentionMaxEvents)
      .describe('Most events kept for resumption, whatever their age.'),
    pingIntervalMs: z
      .number()
      .int()
      .min(0)
      .default(LIVE_QUERY_DEFAULTS.pingIntervalMs)
      .describe('WebSocket pings; a client that has not answered the previous ping is dropped. 0: no pings.'),
    idleTimeoutMs: z
      .number()
      .int()
      .min(0)
      .default(LIVE_QUERY_DEFAULTS.idleTimeoutMs)
      .describe('A connection without subscriptions that sends nothing for this long is closed. 0: never.'),
    traceSize: z
      .number()
      .int()
      .min(0)
      .max(10_000)
      .default(LIVE_QUERY_DEFAULTS.traceSize)
      .describe('Events per class kept in the master-only delivery trace.'),
  })
  .strict();

const pushSchema = z
  .object({
    apns: z
      .object({
        keyId: z.string().min(1).describe('The key id of the APNs auth key (.p8).'),
        teamId: z.string().min(1).describe('The Apple developer team id.'),
        key: secret(z.string().includes('PRIVATE KEY', { message: 'must be a PEM private key' })).describe(
          'The APNs auth key itself (PEM).',
        ),
        topic: z.string().min(1).describe("The app's bundle id (apns-topic)."),
        production: z.boolean().default(false).describe("Apple's production endpoint (false: the sandbox)."),
        url: secret(z.string().url(), 'url')
          .optional()
          .describe("Another endpoint than Apple's (tests: a local fake)."),
      })
      .strict()
      .optional()
      .describe('APNs with token auth (an auth key of the Apple developer account).'),
    fcm: z
      .object({
        projectId: z.string().min(1).describe("The service account's project_id."),
        clientEmail: z.string().min(1).describe("The service account's client_email."),
        privateKey: secret(
          z.string().includes('PRIVATE KEY', { message: 'must be a PEM private key' }),
        ).describe("The service account's private_key (PEM)."),
        url: secret(z.string().url(), 'url')
          .optional()
          .describe("Another endpoint than Google's (tests: a local fake)."),
        tokenUrl: secret(z.string().url(), 'url')
          .optional()
          .describe("Another token endpoint than Google's (tests: a local fake)."),
      })
      .strict()
      .optional()
      .describe('FCM HTTP v1, from a service account JSON.'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(100)
      .describe('Deliveries in flight at once, per provider.'),
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(1000)
      .describe('Installations read per page while a push runs.'),
  })
  .strict()
  .refine((p) => p.apns !== undefined || p.fcm !== undefined, { message: 'needs apns or fcm' });

/** Signature algorithms an ID token may use (public-key ones only: the service holds no shared secret). */
export const ID_TOKEN_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

/** A provider name: a key of `authData`. */
const PROVIDER_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/** Whether `key` (a PEM text or a JWK) is a public key Node can use; a private part is refused. */
/** Members of a JWK that hold private or symmetric key material (RFC 7518, section 6). */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/**
 * A public key and nothing more: a PEM text of public key blocks only (no private block beside
 * them), or a JWK without private members. A public key is derived from private material too, so
 * the check refuses that material rather than trusting what derives from it.
 */
function isPublicKey(key: string | Record<string, unknown>): boolean {
  try {
    if (typeof key === 'string') {
      return (
        /-----BEGIN (RSA )?PUBLIC KEY-----/.test(key) &&
        !/PRIVATE|ENCRYPTED/.test(key) &&
        createPublicKey(key).type === 'public'
      );
    }
    return (
      !PRIVATE_JWK_MEMBERS.some((member) => member in key) &&
      createPublicKey({ key: key as JsonWebKey, format: 'jwk' }).type === 'public'
    );
  } catch {
    return false;
  }
}

const oneOrMore = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

/**
 * A sign-in provider built in: OpenID Connect ID tokens (JWT) checked offline against public keys
 * given here (a JWKS, or PEM keys), for the issuer(s) and audience(s), unexpired, with `sub` equal
 * to the provider id (users/providers.ts).
 */
const idTokenProviderSchema = z
  .object({
    issuer: oneOrMore,
    audience: oneOrMore,
    // Shown by digest only: a PEM text or JWK could carry more than the public key it yields.
    jwks: secret(
      z
        .object({
          keys: z
            .array(z.record(z.string(), z.unknown()).refine(isPublicKey, 'is not a public key (a JWK)'))
            .min(1),
        })
        .strict(),
      'publicKeys',
    ).optional(),
    publicKeys: secret(
      z.array(z.string().refine(isPublicKey, 'is not a public key (PEM)')).min(1),
      'publicKeys',
    ).optional(),
    algorithms: z
      .array(z.enum(ID_TOKEN_ALGORITHMS))
      .min(1)
      .default([...ID_TOKEN_ALGORITHMS]),
  })
  .strict()
  .refine((p) => (p.jwks === undefined) !== (p.publicKeys === undefined), {
    message: 'needs jwks or publicKeys (one of them)',
  });

/** Why `name` cannot name a sign-in provider (a key of `authData` besides the built-in ones), or undefined. */
export function providerNameProblem(name: string): string | undefined {
  if (name === 'anonymous') return 'anonymous is built in';
  if (name === 'mfa') return 'mfa is the second factor (authData.mfa), not a provider';
  if (!PROVIDER_NAME.test(name)) return 'a provider name is a letter, then letters, digits or _ (64 at most)';
  return undefined;
}

const authSchema = z.record(z.string(), idTokenProviderSchema).superRefine((providers, ctx) => {
  for (const name of Object.keys(providers)) {
    const problem = providerNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
  }
});

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
    rateLimit: z
      .array(
        z
          .object({
            path: z.string().refine(isRegExp, 'must be a valid regular expression'),
            methods: z.array(z.enum(['GET', 'POST', 'PUT', 'DELETE'])).optional(),
            window: z.number().positive(),
            max: z.number().int().positive(),
            by: z.enum(['ip', 'user', 'session']).default('ip'),
            error: z.string().min(1).optional(),
          })
          .strict(),
      )
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
        'Memory (MB, estimated) for rows of the embedded store kept after a read by id, so that the ' +
          'next read of the same row skips the SQL engine; 0 turns it off. The PostgreSQL store has none.',
      ),
    logLevel: z
      .enum(LOG_LEVELS)
      .default('info')
      .describe("Level of the service's log (one JSON line per request at `info`)."),
    serverURL: secret(z.string().url(), 'url')
      .optional()
      .describe('Public address of the service, used in Location headers and file urls.'),
    maxLimit: z
      .number()
      .int()
      .positive()
      .default(1000)
      .describe('The most rows one find answers (a larger limit is lowered).'),
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
    accountLockout: z
      .object({
        threshold: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .describe('Failed logins for one name before it is locked.'),
        duration: z.number().int().min(1).describe('Seconds a locked name stays locked.'),
      })
      .strict()
      .optional()
      .describe(
        'After `threshold` failed logins for one name, logins for it are refused for `duration` seconds.',
      ),
    email: z
      .object({
        adapter: z
          .enum(['dev', 'smtp'])
          .default('dev')
          .describe('`dev` (a mailbox in <dataDir>/mailbox) or `smtp`.'),
        from: z.string().min(3).default('no-reply@localhost').describe('The sender of every mail.'),
        smtp: z
          .object({
            host: z.string().min(1).describe('The SMTP server.'),
            port: z.number().int().min(1).max(65535).default(587).describe('Its port.'),
            secure: z
              .boolean()
              .default(false)
              .describe('TLS from the start (port 465); else STARTTLS when offered.'),
            auth: secret(z.object({ user: z.string(), pass: z.string() }).strict())
              .optional()
              .describe('The SMTP login (user and pass).'),
            ignoreTLS: z.boolean().default(false).describe('Never upgrade the connection to TLS.'),
          })
          .strict()
          .optional()
          .describe('The SMTP server, for the `smtp` adapter.'),
      })
      .strict()
      .refine((e) => e.adapter !== 'smtp' || e.smtp !== undefined, {
        message: 'the smtp adapter needs email.smtp.host',
      })
      .default({ adapter: 'dev', from: 'no-reply@localhost' })
      .describe('Outgoing mail: a dev mailbox in <dataDir>/mailbox (default) or SMTP.'),
    cloud: z
      .string()
      .min(1)
      .optional()
      .describe('A JS or TS module that registers cloud code (PROTOCOL.md "Cloud code module").'),
    hooks: z
      .object({
        allowInsecureUrls: z
          .boolean()
          .default(false)
          .describe('Plain http receivers (tests and local development only; the service warns at start).'),
        trustedCA: z
          .string()
          .min(1)
          .optional()
          .describe(
            'A PEM certificate (the text or a file path) trusted for receivers, besides the system CAs.',
          ),
        timeoutMs: z
          .number()
          .int()
          .min(1)
          .max(120_000)
          .default(10_000)
          .describe('How long a call to a receiver may take, in milliseconds.'),
        retries: z
          .number()
          .int()
          .min(0)
          .max(10)
          .default(3)
          .describe(
            'Further attempts of an after-hook delivery that failed in transit (timeout, 5xx, unreachable).',
          ),
        retryBackoffMs: z
          .number()
          .int()
          .min(1)
          .max(600_000)
          .default(1000)
          .describe('Wait before the first retry; it doubles for each next one.'),
        deliveryLogSize: z
          .number()
          .int()
          .min(1)
          .max(100_000)
          .default(1000)
          .describe('Deliveries kept in the master-only delivery log (the oldest go first).'),
      })
      .strict()
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
    jobs: z
      .object({
        runSchedules: z
          .boolean()
          .default(true)
          .describe('This instance runs the `_JobSchedule` rows when due (false: other instances do).'),
      })
      .strict()
      .default({ runSchedules: true })
      .describe('Jobs and their schedules.'),
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
    idempotency: z
      .object({
        paths: z
          .array(pathPattern)
          .min(1)
          .describe('Regular expressions over the path after the mount path, e.g. `classes/.*`.'),
        ttl: z.number().int().positive().default(300).describe('Seconds a request id is remembered.'),
      })
      .strict()
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

function parseByteSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(text.trim())!;
  const units: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };
  return Math.floor(Number(m[1]) * units[(m[2] ?? 'b').toLowerCase()]!);
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
  ['BDS_SERVER_URL', 'serverURL', 'string'],
  ['BDS_CLOUD', 'cloud', 'string'],
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
