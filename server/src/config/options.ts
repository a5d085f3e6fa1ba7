import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { randomSecret } from '../util/ids.ts';

const limit = z.number().int().min(-1);

const requestComplexitySchema = z
  .object({
    includeDepth: limit.default(10),
    includeCount: limit.default(100),
    subqueryDepth: limit.default(10),
    queryDepth: limit.default(10),
    batchRequestLimit: limit.default(100),
  })
  .strict();

const byteSize = z.union([
  z.number().int().positive(),
  z
    .string()
    .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i, 'must be a size such as "20mb"')
    .transform(parseByteSize),
]);

export const optionsSchema = z
  .object({
    appId: z.string().min(1),
    masterKey: z.string().min(8, 'must be at least 8 characters'),
    restAPIKey: z.string().min(1).optional(),
    javascriptKey: z.string().min(1).optional(),
    clientKey: z.string().min(1).optional(),
    webhookKey: z.string().min(1).optional(),
    port: z.number().int().min(0).max(65535).default(1337),
    host: z.string().default('0.0.0.0'),
    mountPath: z
      .string()
      .regex(/^\/[A-Za-z0-9_\-/]*$/, 'must start with / and contain only letters, digits, _, - and /')
      .default('/api'),
    dataDir: z.string().min(1).default('./data'),
    /** Public address of the service, used in Location headers and file urls. */
    serverURL: z.string().url().optional(),
    maxLimit: z.number().int().positive().default(1000),
    maxUploadSize: byteSize.default(20 * 1024 * 1024),
    allowClientClassCreation: z.boolean().default(false),
    protectedFieldsOwnerExempt: z.boolean().default(false),
    protectedFieldsSaveResponseExempt: z.boolean().default(false),
    sessionLength: z
      .number()
      .int()
      .positive()
      .default(365 * 24 * 3600),
    requestComplexity: requestComplexitySchema.default({
      includeDepth: 10,
      includeCount: 100,
      subqueryDepth: 10,
      queryDepth: 10,
      batchRequestLimit: 100,
    }),
    fileUpload: z
      .object({
        enableForPublic: z.boolean().default(false),
        enableForAnonymousUser: z.boolean().default(false),
        enableForAuthenticatedUser: z.boolean().default(true),
      })
      .strict()
      .default({ enableForPublic: false, enableForAnonymousUser: false, enableForAuthenticatedUser: true }),
    liveQuery: z
      .object({ path: z.string().default('/live') })
      .strict()
      .default({ path: '/live' }),
    verifyUserEmails: z.boolean().default(false),
    /** Lifetime of an email verification link, in seconds. */
    emailVerifyTokenValidity: z
      .number()
      .int()
      .positive()
      .default(24 * 3600),
    /** Lifetime of a password reset link, in seconds. */
    passwordResetTokenValidity: z.number().int().positive().default(7200),
    /** After `threshold` failed logins for one name, logins for it are refused for `duration` seconds. */
    accountLockout: z
      .object({ threshold: z.number().int().min(1).max(1000), duration: z.number().int().min(1) })
      .strict()
      .optional(),
    /** Outgoing mail: a dev mailbox in <dataDir>/mailbox (default) or SMTP. */
    email: z
      .object({
        adapter: z.enum(['dev', 'smtp']).default('dev'),
        from: z.string().min(3).default('no-reply@localhost'),
        smtp: z
          .object({
            host: z.string().min(1),
            port: z.number().int().min(1).max(65535).default(587),
            secure: z.boolean().default(false),
            auth: z.object({ user: z.string(), pass: z.string() }).strict().optional(),
            ignoreTLS: z.boolean().default(false),
          })
          .strict()
          .optional(),
      })
      .strict()
      .refine((e) => e.adapter !== 'smtp' || e.smtp !== undefined, {
        message: 'the smtp adapter needs email.smtp.host',
      })
      .default({ adapter: 'dev', from: 'no-reply@localhost' }),
    /** Time a SIGTERM/close waits for in-flight requests before closing the store. */
    shutdownGraceMs: z.number().int().min(0).default(10_000),
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
    if (isPlainObject(existing) && isPlainObject(value)) {
      target[last] = { ...existing, ...expandDottedKeys(value) };
    } else {
      target[last] = isPlainObject(value) ? expandDottedKeys(value) : value;
    }
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
  ['BDS_SERVER_URL', 'serverURL', 'string'],
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
      if (!isPlainObject(parsed)) throw new Error('the file must hold a JSON object');
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
