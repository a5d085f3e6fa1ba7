import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { type FromParseCounts, isObject } from '@bds/client/protocol';
import { sessionIsLive, sessionRowExpiresAt } from '../auth/caller.ts';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { ctxOf } from '../kernel/context.ts';
import { BdsError } from '../kernel/errors.ts';
import { MATCH_ALL, type QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import { type ClassSchema, USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';
import { providerPayload } from '../users/providers.ts';
import { anonymousIdOf } from '../users/shared.ts';
import { TransferError, type TransferFiles } from './format.ts';
import { checkSchemaLine, type Line, schemaDocs } from './import.ts';
import { type ParseSchema, ParseSource, type ParseSourceOptions, SOURCE_PAGE } from './parse-source.ts';

/**
 * `import --from-parse` (docs/transfer.md, "From parse-server"): a running parse-server app read
 * over its REST API (parse-source.ts) and written through the write pipeline's restore entry, as
 * the import of an export file writes (source `import`, no trigger runs, one event per write).
 *
 * Classes are read page by page by objectId; after each page's transaction the progress is saved
 * in a state file, so an interrupted import goes on where it stopped. A second run reads only the
 * rows changed since the first one started (by updatedAt, on the incumbent's clock); a row that
 * is already here is replaced (deleted and restored through the pipeline), with its relation
 * members read again; then the rows here that the incumbent no longer has are deleted (its REST API
 * keeps no tombstones: the objectIds here are asked about page by page).
 */
export interface FromParseOptions extends ParseSourceOptions {
  /** Where the progress of this import is kept between runs (resume, second runs). */
  stateFile: string;
  /** Whether the incumbent's `_Session` rows come too, so signed-in users stay signed in. */
  sessions?: boolean;
  /**
   * Whether the service takes sign-ins with a provider (besides the built-in `anonymous`): by
   * default the providers of the option `auth`; a running service answers its own, the ones its
   * cloud module registers included.
   */
  supportsProvider?: (provider: string) => boolean;
  /**
   * Called when a class starts (with the rows the incumbent counts for this run), after each of
   * its pages and once it is done.
   */
  progress?: (event: { className: string; rows: number; total?: number; done: boolean }) => void;
}

/** The state file's name in the data dir, unless named (the CLI's `--state`). */
export const FROM_PARSE_STATE_FILE = 'from-parse-state.json';

/** What a run brought (client/src/protocol/from-parse.ts, which the console reads too). */
export type FromParseSummary = FromParseCounts;

/**
 * The incumbent's own classes whose schema is not brought: its jobs, hooks, push and graphql state,
 * which the service has no use for, and `_Session`, whose rows come only with the option `sessions`.
 */
const NOT_IMPORTED = new Set([
  '_Session',
  '_PushStatus',
  '_JobStatus',
  '_JobSchedule',
  '_Hooks',
  '_GlobalConfig',
  '_GraphQLConfig',
  '_Audience',
  '_Idempotency',
]);

/**
 * Fields of the incumbent's `_User` that are not values of a row as it comes: the password (never
 * read; its hash comes as an internal column) and authData (only the entries of providers the
 * service supports are kept, by linksOf).
 */
const USER_FIELDS_LEFT_OUT = new Set(['password', 'authData']);

/**
 * The fields of a `_Session` row that come with it (the service's own `_Session` schema: its
 * schema is kept, not the incumbent's); the token is the incumbent's, so it works here.
 */
const SESSION_FIELDS = new Set([
  'objectId',
  'createdAt',
  'updatedAt',
  'ACL',
  'sessionToken',
  'user',
  'expiresAt',
  'installationId',
  'createdWith',
]);

interface ClassProgress {
  after: string | null;
  done: boolean;
  rows: number;
  /** Second runs: whether the rows the incumbent no longer has are deleted here. */
  pruned?: boolean;
}

interface State {
  /** The incumbent, so a state file is never used for another app. */
  source: string;
  /** The incumbent's clock when the last complete run started. */
  lastStartedAt: string | null;
  current: { startedAt: string; since: string | null; classes: Record<string, ClassProgress> } | null;
  /** Files already here: the incumbent's name to the name here. */
  files: Record<string, string>;
}

export async function importFromParse(
  data: Data,
  files: TransferFiles,
  options: FromParseOptions,
): Promise<FromParseSummary> {
  const source = new ParseSource(options);
  try {
    return await run(data, files, source, options);
  } finally {
    await source.close();
  }
}

async function run(
  data: Data,
  files: TransferFiles,
  source: ParseSource,
  options: FromParseOptions,
): Promise<FromParseSummary> {
  const sourceName = `${options.serverURL.replace(/\/+$/, '')} ${options.appId}`;
  const state = await readState(options.stateFile, sourceName);
  const resumed = state.current !== null;
  if (!state.current) {
    state.current = { startedAt: await source.clock(), since: state.lastStartedAt, classes: {} };
    await saveState(options.stateFile, state);
  }
  const current = state.current;
  const summary: FromParseSummary = {
    since: current.since,
    resumed,
    classes: 0,
    rows: 0,
    relations: 0,
    files: 0,
    passwords: 0,
    sessions: 0,
    deleted: 0,
    authDataNotImported: {},
  };
  const supportsProvider =
    options.supportsProvider ?? ((provider: string) => Object.hasOwn(data.core.options.auth, provider));
  const ctx = ctxOf(MASTER, 'import');

  // Every schema is checked against the target's (the schema registry's own plans) before any is written.
  const lines = (await source.schemas()).filter((s) => !NOT_IMPORTED.has(s.className)).map(schemaLine);
  for (const line of lines) {
    try {
      checkSchemaLine(data, line);
    } catch (err) {
      throw new TransferError(`the schema of ${String(line.className)}: ${(err as Error).message}`, 3);
    }
  }
  const { params, masterKeyOnly } = await source.config();
  if (Object.keys(params).length > 0) await data.writes.updateConfig(ctx, params, masterKeyOnly);
  for (const line of lines) {
    const className = line.className as string;
    const existing = data.core.schemas.get(className);
    const [first, ...rest] = schemaDocs(line, existing);
    if (existing) await data.writes.updateClass(ctx, className, first!);
    else await data.writes.createClass(ctx, className, first!);
    for (const doc of rest) await data.writes.updateClass(ctx, className, doc);
  }
  summary.classes = lines.length;

  // Sessions last, after the users they point to; the service's own `_Session` schema is kept.
  const classNames = lines.map((line) => line.className as string);
  if (options.sessions) classNames.push('_Session');
  for (const className of classNames) {
    current.classes[className] ??= { after: null, done: false, rows: 0 };
    const progress = current.classes[className];
    if (!progress.done) {
      const schema = data.core.schemas.get(className)!;
      const total = await source.count(className, current.since);
      options.progress?.({ className, rows: progress.rows, total, done: false });
      // The next page is read from the incumbent while this one is written here.
      const read = (after: string | null) => {
        const next = source.page(className, after, current.since);
        next.catch(() => undefined); // awaited below; a write failing first must not leave it unhandled
        return next;
      };
      let reading = read(progress.after);
      for (;;) {
        const page = await reading;
        if (page.length === 0) break;
        reading = read(page.at(-1)!.objectId as string);
        // An expired session of the incumbent signs nobody in: it stays there.
        const rows =
          className === '_Session'
            ? page.filter((row) => sessionIsLive({ expiresAt: sessionRowExpiresAt(row) }, Date.now()))
            : page;
        const written =
          rows.length > 0
            ? await writePage(data, files, source, state, schema, rows, supportsProvider)
            : { relations: 0, files: 0, passwords: 0, authDataNotImported: [] };
        if (className === '_Session') summary.sessions += rows.length;
        else summary.rows += rows.length;
        summary.relations += written.relations;
        summary.files += written.files;
        summary.passwords += written.passwords;
        for (const provider of written.authDataNotImported) {
          summary.authDataNotImported[provider] = (summary.authDataNotImported[provider] ?? 0) + 1;
        }
        progress.after = page.at(-1)!.objectId as string;
        progress.rows += page.length;
        await saveState(options.stateFile, state);
        options.progress?.({ className, rows: progress.rows, done: false });
      }
      progress.done = true;
      await saveState(options.stateFile, state);
      options.progress?.({ className, rows: progress.rows, done: true });
    }
    if (current.since !== null && !progress.pruned) {
      const schema = data.core.schemas.get(className)!;
      summary.deleted += await deleteGone(data, source, schema, options.pageSize ?? SOURCE_PAGE);
      progress.pruned = true;
      await saveState(options.stateFile, state);
    }
  }
  state.lastStartedAt = current.startedAt;
  state.current = null;
  await saveState(options.stateFile, state);
  return summary;
}

/** The incumbent's schema as an export file's `schema` line (import.ts plans and writes those). */
function schemaLine(schema: ParseSchema): Line {
  const fields: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(schema.fields)) {
    if (schema.className === '_User' && USER_FIELDS_LEFT_OUT.has(name)) continue;
    fields[name] = def;
  }
  // Its `_id_` index (and any on its internal columns) are its own storage's, made here by the store.
  const indexes: Record<string, unknown> = {};
  for (const [name, keys] of Object.entries(schema.indexes ?? {})) {
    if (name === '_id_' || Object.keys(keys).some((key) => key.startsWith('_'))) continue;
    indexes[name] = keys;
  }
  // Its PostgreSQL adapter answers an `ACL` entry in every class-level permission: no operation.
  const { ACL: _, ...classLevelPermissions } = schema.classLevelPermissions ?? {};
  return {
    type: 'schema',
    className: schema.className,
    fields,
    classLevelPermissions,
    indexes,
  };
}

/**
 * One page of rows: files downloaded, password hashes and relation members read (all before the
 * transaction), then, in one transaction, each row restored (replacing one already here) and its
 * relation members added.
 */
async function writePage(
  data: Data,
  files: TransferFiles,
  source: ParseSource,
  state: State,
  schema: ClassSchema,
  page: Record<string, unknown>[],
  supportsProvider: (provider: string) => boolean,
): Promise<{ relations: number; files: number; passwords: number; authDataNotImported: string[] }> {
  const { className } = schema;
  const ctx = ctxOf(MASTER, 'import');
  let fileCount = 0;
  const rows: Row[] = [];
  const anonymousIds = new Map<string, string>();
  const authDataNotImported: string[] = [];
  for (const incoming of page) {
    const row: Row = {};
    if (className === '_User' && incoming.authData !== undefined) {
      const links = linksOf(incoming.authData, supportsProvider);
      if (links.authData) row.authData = links.authData;
      if (links.anonymousId) anonymousIds.set(incoming.objectId as string, links.anonymousId);
      authDataNotImported.push(...links.leftOut);
    }
    for (const [name, value] of Object.entries(incoming)) {
      if (className === '_User' && USER_FIELDS_LEFT_OUT.has(name)) continue;
      if (className === '_Session' && !SESSION_FIELDS.has(name)) continue;
      if (isObject(value) && value.__type === 'Relation') continue;
      row[name] = await withFilesHere(value, async (file) => {
        const [name, isNew] = await bringFile(files, source, state, file);
        if (isNew) fileCount++;
        return name;
      });
    }
    rows.push(row);
  }
  const ids = rows.map((r) => r.objectId as string);
  const hashes = className === '_User' ? await source.passwordHashes(ids) : new Map<string, string>();
  const members: Array<{ field: string; owningId: string; relatedIds: string[] }> = [];
  for (const [field, def] of Object.entries(schema.fields)) {
    if (def.type !== 'Relation' || !def.targetClass) continue;
    for (const m of await source.relationMembers(className, field, def.targetClass, ids)) {
      members.push({ field, ...m });
    }
  }
  const here = await existing(data, schema, ids);
  await data.core.store.transaction(async () => {
    for (const row of rows) {
      const objectId = row.objectId as string;
      const internal: Record<string, string> = {};
      const hash = hashes.get(objectId);
      if (hash) internal[USER_INTERNAL_COLUMNS.hash] = hash;
      const anonymousId = anonymousIds.get(objectId);
      if (anonymousId) internal[USER_INTERNAL_COLUMNS.anonymousId] = anonymousId;
      try {
        if (here.has(objectId)) await data.writes.delete(ctx, className, objectId);
        await data.writes.restore(
          ctx,
          className,
          row,
          Object.keys(internal).length > 0 ? internal : undefined,
        );
      } catch (err) {
        const code = err instanceof BdsError ? 3 : 1;
        throw new TransferError(`row ${objectId} of ${className}: ${(err as Error).message}`, code);
      }
    }
    for (const m of members)
      await data.writes.restoreRelation(ctx, className, m.owningId, m.field, m.relatedIds);
  });
  return {
    relations: members.reduce((sum, m) => sum + m.relatedIds.length, 0),
    files: fileCount,
    passwords: hashes.size,
    authDataNotImported,
  };
}

/**
 * A user's `authData` from the incumbent as kept here (sign-up.ts keeps it so): the payloads of
 * the providers the service supports, each with the id it finds users by, and the anonymous id
 * also as its internal column. Answers the providers left out, too.
 */
function linksOf(
  authData: unknown,
  supportsProvider: (provider: string) => boolean,
): { authData?: Record<string, unknown>; anonymousId?: string; leftOut: string[] } {
  if (!isObject(authData)) return { leftOut: [] };
  const kept: Record<string, unknown> = {};
  const leftOut: string[] = [];
  let anonymousId: string | undefined;
  for (const [provider, payload] of Object.entries(authData)) {
    if (payload === null) continue;
    try {
      if (provider === 'anonymous') {
        anonymousId = anonymousIdOf(payload);
        kept.anonymous = payload;
        continue;
      }
      if (provider !== 'mfa' && supportsProvider(provider)) {
        kept[provider] = providerPayload(provider, payload);
        continue;
      }
    } catch {
      // A payload the service would refuse (no id): left out as an unsupported one is.
    }
    leftOut.push(provider);
  }
  return { authData: Object.keys(kept).length > 0 ? kept : undefined, anonymousId, leftOut };
}

/**
 * Deletes, through the write pipeline, the rows of a class here that the incumbent no longer has:
 * the objectIds here read a page at a time and asked about, so memory does not grow with the class.
 */
async function deleteGone(
  data: Data,
  source: ParseSource,
  schema: ClassSchema,
  pageSize: number,
): Promise<number> {
  const { store, schemas } = data.core;
  const { className } = schema;
  const ctx = ctxOf(MASTER, 'import');
  let deleted = 0;
  let after: string | undefined;
  for (;;) {
    const where: QueryNode =
      after === undefined ? MATCH_ALL : { type: 'compare', path: ['objectId'], op: 'gt', value: after };
    const page = await store.find(
      schema,
      { where, order: [{ path: ['objectId'], descending: false }], limit: pageSize, skip: 0 },
      schemas.lookup,
    );
    if (page.length === 0) return deleted;
    const ids = page.map((row) => row.objectId as string);
    const there = await source.existingIds(className, ids);
    const gone = ids.filter((id) => !there.has(id));
    if (gone.length > 0) {
      await store.transaction(async () => {
        for (const objectId of gone) await data.writes.delete(ctx, className, objectId);
      });
    }
    deleted += gone.length;
    after = ids.at(-1);
  }
}

/** The objectIds of a page that are already here (a second run, or a page read again on resume). */
async function existing(data: Data, schema: ClassSchema, ids: string[]): Promise<Set<string>> {
  const { store, schemas } = data.core;
  const rows = await store.find(
    schema,
    {
      where: { type: 'in', path: ['objectId'], values: ids, not: false },
      order: [],
      limit: ids.length,
      skip: 0,
    },
    schemas.lookup,
  );
  return new Set(rows.map((r) => r.objectId as string));
}

/** A value with each File in it (at any depth) renamed to the file's name here. */
async function withFilesHere(
  value: unknown,
  rename: (file: { name: string; url?: string }) => Promise<string>,
): Promise<unknown> {
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) out.push(await withFilesHere(item, rename));
    return out;
  }
  if (!isObject(value)) return value;
  if (value.__type === 'File' && typeof value.name === 'string') {
    return { __type: 'File', name: await rename(value as { name: string; url?: string }) };
  }
  if (typeof value.__type === 'string') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = await withFilesHere(item, rename);
  return out;
}

/**
 * Downloads a file the incumbent serves and stores it here, once: under the same name when it is
 * one the service could have issued (the incumbent's `<32 hex>_<name>` are), else under a new one.
 * Answers the name here and whether it was stored by this call.
 */
async function bringFile(
  files: TransferFiles,
  source: ParseSource,
  state: State,
  file: { name: string; url?: string },
): Promise<[string, boolean]> {
  const known = state.files[file.name];
  if (known) return [known, false];
  const name = files.validName(file.name) ? file.name : issuedName(file.name);
  if (!(await files.info?.(name))) {
    if (!file.url) throw new TransferError(`the file ${file.name} has no url to download it from.`, 1);
    const download = await source.download(file.url);
    await files.save(
      name,
      download.contentType,
      download.body,
      download.size ?? Number.MAX_SAFE_INTEGER,
      new Date().toISOString(),
      {
        metadata: {},
        tags: {},
      },
    );
  }
  state.files[file.name] = name;
  return [name, true];
}

/** A name as the file service issues one: 32 random hex digits, `_`, the name in safe characters. */
function issuedName(original: string): string {
  const safe = original.replace(/[^A-Za-z0-9._-]/g, '_').slice(-100) || 'file';
  return `${randomBytes(16).toString('hex')}_${safe}`;
}

async function readState(file: string, source: string): Promise<State> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return { source, lastStartedAt: null, current: null, files: {} };
  }
  const state = JSON.parse(text) as State;
  if (state.source !== source) {
    throw new TransferError(
      `${file} records an import from ${state.source}, not ${source}: name another --state file.`,
      2,
    );
  }
  return state;
}

async function saveState(file: string, state: State): Promise<void> {
  await writeFile(`${file}.tmp`, JSON.stringify(state));
  await rename(`${file}.tmp`, file);
}
