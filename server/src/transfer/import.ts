import { createHash } from 'node:crypto';
import {
  BASE64_PATTERN,
  type FileStrings,
  fileDataProblem,
  ISO_DATE_PATTERN,
  isObject,
  OBJECT_ID_PATTERN,
} from '@bds/client/protocol';
import type { Data } from '../data/data.ts';
import { parseRestoredRow } from '../data/restored-row.ts';
import { MASTER } from '../kernel/caller.ts';
import { ctxOf } from '../kernel/context.ts';
import { BdsError } from '../kernel/errors.ts';
import { MATCH_ALL } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import { type ClassSchema, DEFAULT_FIELDS, type FieldDef } from '../kernel/schema.ts';
import { jsonProblem, MAX_JSON_DEPTH } from '../kernel/validate.ts';
import type { InternalValues } from '../storage/adapter.ts';
import {
  EXIT,
  type ExportSummary,
  FORMAT,
  FORMAT_VERSION,
  ROW_PAGE,
  readLines,
  TransferError,
  type TransferFiles,
} from './format.ts';

export type ImportSummary = ExportSummary;

export type Line = Record<string, unknown> & { type: string };

/** The sections of the file in their order; a line may not go back to an earlier section. */
const SECTION: Record<string, number> = {
  header: 0,
  config: 1,
  schema: 2,
  row: 3,
  relation: 3,
  file: 4,
  chunk: 4,
  end: 5,
};

/**
 * Imports an export file (format.ts) into an empty app, in two passes over the file, read line by
 * line each time:
 *
 * 1. validate: every line is parsed and checked as the write would check it (the format version,
 *    the order of the sections, each schema planned against the target's, each row against its
 *    schema, each file's bytes against its size and hash, the end line's counts). Nothing is
 *    written until the whole file passed, so a malformed line, an unknown version or a truncated
 *    file leave the target untouched.
 * 2. write, through the write pipeline (source `import`, so every write emits its event): config,
 *    schemas, then rows and relation members in transactions of ROW_PAGE lines, then files.
 *
 * Refuses a target that holds rows, files or config parameters (EXIT.notEmpty).
 */
export async function importApp(data: Data, files: TransferFiles, file: string): Promise<ImportSummary> {
  await checkEmpty(data, files);
  const summary = await validate(data, files, readLines(file));
  await write(data, files, readLines(file));
  return summary;
}

/** The target must be an empty app: no row in any class, no file, no config parameter. */
async function checkEmpty(data: Data, files: TransferFiles): Promise<void> {
  const { store, schemas } = data.core;
  const withRows: string[] = [];
  for (const schema of schemas.all()) {
    const rows = await store.find(schema, { where: MATCH_ALL, order: [], limit: 1, skip: 0 }, schemas.lookup);
    if (rows.length > 0) withRows.push(schema.className);
  }
  const problems: string[] = [];
  if (withRows.length > 0) problems.push(`rows in ${withRows.join(', ')}`);
  for await (const _ of files.list()) {
    problems.push('files');
    break;
  }
  const config = await store.getConfig();
  if (Object.keys(config.params).length > 0) problems.push('config parameters');
  if (problems.length > 0) {
    throw new TransferError(
      `The target app is not empty (${problems.join('; ')}): import only into an empty app (a new data dir or database).`,
      EXIT.notEmpty,
    );
  }
}

function parseLine(text: string, n: number): Line {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new TransferError(`not valid JSON (${(err as Error).message}).`, EXIT.badInput, n);
  }
  if (!isObject(value) || typeof value.type !== 'string') {
    throw new TransferError('each line must be a JSON object with a "type".', EXIT.badInput, n);
  }
  // What the service refuses in any request body (a row sits two levels below the line).
  const problem = jsonProblem(value, MAX_JSON_DEPTH + 2);
  if (problem) throw new TransferError(`the line ${problem}.`, EXIT.badInput, n);
  return value as Line;
}

/** The schema document for the pipeline's createClass/updateClass, from a `schema` line. */
export function schemaDocs(line: Line, existing: ClassSchema | undefined): Array<Record<string, unknown>> {
  const fields: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(line.fields as Record<string, FieldDef>)) {
    if (name in DEFAULT_FIELDS || existing?.fields[name]) continue;
    fields[name] = def;
  }
  const wanted = line.indexes as Record<string, Record<string, 1 | -1>>;
  const doc: Record<string, unknown> = { fields, classLevelPermissions: line.classLevelPermissions };
  if (!existing) return [{ ...doc, indexes: wanted }];
  // An index of the target that the export does not have, or has with other keys, is dropped first.
  const indexes: Record<string, unknown> = {};
  const later: Record<string, unknown> = {};
  for (const [name, keys] of Object.entries(existing.indexes)) {
    if (JSON.stringify(wanted[name]) === JSON.stringify(keys)) continue;
    indexes[name] = { __op: 'Delete' };
    if (wanted[name]) later[name] = wanted[name];
  }
  for (const [name, keys] of Object.entries(wanted)) if (!existing.indexes[name]) indexes[name] = keys;
  const docs = [{ ...doc, indexes }];
  if (Object.keys(later).length > 0) docs.push({ indexes: later });
  return docs;
}

export function checkSchemaLine(data: Data, line: Line): ClassSchema {
  const { schemas } = data.core;
  const { className, fields, classLevelPermissions, indexes } = line;
  if (
    typeof className !== 'string' ||
    !isObject(fields) ||
    !isObject(classLevelPermissions) ||
    !isObject(indexes)
  ) {
    throw new Error('a schema needs className, fields, classLevelPermissions and indexes.');
  }
  for (const [name, def] of Object.entries(fields)) {
    if (!isObject(def) || typeof def.type !== 'string') throw new Error(`field ${name} needs a type.`);
  }
  const existing = schemas.get(className);
  if (!existing) return schemas.planCreate(className, schemaDocs(line, undefined)[0]!);
  for (const [name, def] of Object.entries(fields as Record<string, FieldDef>)) {
    const have = existing.fields[name];
    if (have && (have.type !== def.type || (have.targetClass ?? null) !== (def.targetClass ?? null))) {
      throw new Error(
        `class ${className} exists in the target with ${name} of type ${have.type}; the export has ${def.type}.`,
      );
    }
  }
  // The first document is enough to check: a second only re-adds indexes the first checked.
  return schemas.planUpdate(className, schemaDocs(line, existing)[0]!).schema;
}

/** Pass 1: checks the whole file and answers what it holds. Writes nothing. */
async function validate(
  data: Data,
  files: TransferFiles,
  lines: AsyncIterable<string>,
): Promise<ImportSummary> {
  const planned = new Map<string, ClassSchema>();
  const fileNames = new Set<string>();
  const counts: ImportSummary = { lines: 0, classes: 0, rows: 0, relations: 0, files: 0 };
  let section = -1;
  let n = 0;
  let ended = false;
  /** The file whose chunks are being read. */
  let open:
    | {
        name: string;
        size: number;
        etag: string;
        chunks: number;
        seq: number;
        bytes: number;
        hash: ReturnType<typeof createHash>;
      }
    | undefined;

  for await (const text of lines) {
    n++;
    if (ended) throw new TransferError('there is more after the end line.', EXIT.badInput, n);
    const line = parseLine(text, n);
    const rank = SECTION[line.type];
    if (rank === undefined) throw new TransferError(`unknown line type "${line.type}".`, EXIT.badInput, n);
    if (n === 1 && line.type !== 'header') {
      throw new TransferError('an export starts with its header line.', EXIT.badInput, n);
    }
    if (rank < section || (rank === section && (line.type === 'header' || line.type === 'config'))) {
      throw new TransferError(`a ${line.type} line cannot come here (out of order).`, EXIT.badInput, n);
    }
    section = rank;
    if (open && line.type !== 'chunk') {
      throw new TransferError(
        `file ${open.name} has ${open.seq} of its ${open.chunks} chunks.`,
        EXIT.badInput,
        n,
      );
    }
    try {
      switch (line.type) {
        case 'header':
          if (line.format !== FORMAT)
            throw new Error(`not an export of this service (format ${JSON.stringify(line.format)}).`);
          if (line.version !== FORMAT_VERSION) {
            throw new Error(
              `unknown format version ${JSON.stringify(line.version)}; this service reads version ${FORMAT_VERSION}.`,
            );
          }
          break;
        case 'config':
          if (!isObject(line.params) || !isObject(line.masterKeyOnly))
            throw new Error('config needs params and masterKeyOnly objects.');
          if (!Object.values(line.masterKeyOnly).every((v) => typeof v === 'boolean')) {
            throw new Error('masterKeyOnly holds true or false per parameter.');
          }
          break;
        case 'schema': {
          const schema = checkSchemaLine(data, line);
          if (planned.has(schema.className)) throw new Error(`a second schema of ${schema.className}.`);
          planned.set(schema.className, schema);
          counts.classes++;
          break;
        }
        case 'row': {
          const schema = planned.get(line.className as string);
          if (!schema)
            throw new Error(`a row of ${JSON.stringify(line.className)}, a class without a schema line.`);
          if (!isObject(line.row)) throw new Error('a row line needs a row object.');
          if (line.internal !== undefined && !isObject(line.internal))
            throw new Error('internal must be an object.');
          parseRestoredRow(schema, line.row, line.internal as InternalValues | undefined);
          counts.rows++;
          break;
        }
        case 'relation': {
          const schema = planned.get(line.className as string);
          if (!schema)
            throw new Error(
              `a relation of ${JSON.stringify(line.className)}, a class without a schema line.`,
            );
          if (schema.fields[line.field as string]?.type !== 'Relation') {
            throw new Error(`${schema.className}.${String(line.field)} is not a Relation field.`);
          }
          const ids = line.relatedIds;
          if (typeof line.owningId !== 'string' || !OBJECT_ID_PATTERN.test(line.owningId))
            throw new Error('owningId must be an objectId.');
          if (
            !Array.isArray(ids) ||
            ids.length === 0 ||
            !ids.every((id) => typeof id === 'string' && OBJECT_ID_PATTERN.test(id))
          ) {
            throw new Error('relatedIds must be a non-empty array of objectIds.');
          }
          counts.relations += ids.length;
          break;
        }
        case 'file': {
          const { name, contentType, size, etag, createdAt, chunks } = line;
          if (typeof name !== 'string' || !files.validName(name))
            throw new Error(`invalid file name ${JSON.stringify(name)}.`);
          if (fileNames.has(name)) throw new Error(`a second file named ${name}.`);
          if (typeof contentType !== 'string' || typeof etag !== 'string')
            throw new Error('a file needs contentType and etag.');
          if (typeof createdAt !== 'string' || !ISO_DATE_PATTERN.test(createdAt))
            throw new Error('a file needs its createdAt date.');
          if (!Number.isSafeInteger(size) || (size as number) < 0)
            throw new Error('a file needs its size in bytes.');
          if (!Number.isSafeInteger(chunks) || (chunks as number) < 0 || (chunks === 0) !== (size === 0)) {
            throw new Error('a file needs its number of chunks.');
          }
          // Absent when the file has none (and in exports made before files kept them).
          for (const label of ['metadata', 'tags'] as const) {
            const problem = line[label] === undefined ? undefined : fileDataProblem(label, line[label]);
            if (problem) throw new Error(problem);
          }
          fileNames.add(name);
          open = {
            name,
            size: size as number,
            etag,
            chunks: chunks as number,
            seq: 0,
            bytes: 0,
            hash: createHash('sha256'),
          };
          if (open.chunks === 0) open = closeFile(open);
          counts.files++;
          break;
        }
        case 'chunk': {
          if (!open || line.name !== open.name) throw new Error('a chunk of no file being read.');
          if (line.seq !== open.seq)
            throw new Error(`chunk ${String(line.seq)} of ${open.name} where ${open.seq} was due.`);
          if (typeof line.base64 !== 'string' || !BASE64_PATTERN.test(line.base64))
            throw new Error('a chunk needs its bytes in base64.');
          const bytes = Buffer.from(line.base64, 'base64');
          open.hash.update(bytes);
          open.bytes += bytes.byteLength;
          open.seq++;
          if (open.seq === open.chunks) open = closeFile(open);
          break;
        }
        case 'end': {
          if (line.lines !== n)
            throw new Error(`the end line counts ${String(line.lines)} lines; the file has ${n}.`);
          for (const key of ['classes', 'rows', 'relations', 'files'] as const) {
            if (line[key] !== counts[key]) {
              throw new Error(
                `the end line counts ${String(line[key])} ${key}; the file holds ${counts[key]}.`,
              );
            }
          }
          ended = true;
          break;
        }
      }
    } catch (err) {
      if (err instanceof TransferError) throw err;
      const message = err instanceof BdsError || err instanceof Error ? err.message : String(err);
      const what =
        line.type === 'row'
          ? `row ${JSON.stringify((line.row as Row | undefined)?.objectId)} of ${String(line.className)}: `
          : '';
      throw new TransferError(`${what}${message}`, EXIT.badInput, n);
    }
  }
  if (n === 0)
    throw new TransferError('the file is empty; an export starts with its header line.', EXIT.badInput, 1);
  if (!ended) {
    throw new TransferError(
      'the file ends here, without its end line: it is truncated (nothing was imported).',
      EXIT.badInput,
      n,
    );
  }
  counts.lines = n;
  return counts;
}

/** Checks a file's bytes once its last chunk is read. */
function closeFile(open: {
  name: string;
  size: number;
  etag: string;
  bytes: number;
  hash: ReturnType<typeof createHash>;
}): undefined {
  if (open.bytes !== open.size)
    throw new Error(`file ${open.name} holds ${open.bytes} bytes, not ${open.size}.`);
  if (`"${open.hash.digest('base64url')}"` !== open.etag) {
    throw new Error(`the bytes of file ${open.name} do not match its etag.`);
  }
  return undefined;
}

/** What the write pass changed, so that a failure can take it back. */
interface Written {
  /** Classes the import made. */
  created: string[];
  /** Classes that were there (the built-in ones), as they were. */
  changed: Map<string, ClassSchema>;
  files: string[];
  params: string[];
}

/**
 * Pass 2: the writes, through the pipeline, on a file pass 1 accepted. What can still fail here is
 * the store: refusing a row (an objectId twice in a class, a unique value twice) or failing. Then
 * everything the import wrote is taken back through the pipeline (the target was empty: its rows
 * are purged, the classes it made dropped, the built-in classes' schemas put back, its files and
 * config parameters removed) and the error names the line.
 */
async function write(data: Data, files: TransferFiles, lines: AsyncIterable<string>): Promise<void> {
  const written: Written = { created: [], changed: new Map(), files: [], params: [] };
  let n = 0;
  try {
    await writeLines(data, files, lines, written, (at) => {
      n = at;
    });
  } catch (err) {
    const cause = err instanceof TransferError ? err.message : `line ${n}: ${(err as Error).message}`;
    const code = err instanceof TransferError ? err.exitCode : err instanceof BdsError ? EXIT.badInput : 1;
    try {
      await undo(data, files, written);
    } catch (undoErr) {
      throw new TransferError(
        `${cause} The import stopped there, and taking it back failed too (${(undoErr as Error).message}): the target holds part of it; empty it before importing again.`,
        code,
      );
    }
    throw new TransferError(`${cause} The import stopped there; what it had written was taken back.`, code);
  }
}

async function writeLines(
  data: Data,
  files: TransferFiles,
  lines: AsyncIterable<string>,
  written: Written,
  at: (n: number) => void,
): Promise<void> {
  const { writes } = data;
  const { store, schemas } = data.core;
  const ctx = ctxOf(MASTER, 'import');
  const it = lines[Symbol.asyncIterator]();
  let n = 0;
  const next = async (): Promise<Line | undefined> => {
    const r = await it.next();
    if (r.done) return undefined;
    n++;
    at(n);
    return parseLine(r.value, n);
  };
  /** Rows or relation lines waiting for their transaction. */
  let batch: Array<{ n: number; line: Line }> = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const pending = batch;
    batch = [];
    await store.transaction(async () => {
      for (const { n: lineNo, line } of pending) {
        try {
          if (line.type === 'row') {
            await writes.restore(
              ctx,
              line.className as string,
              line.row as Row,
              line.internal as InternalValues | undefined,
            );
          } else {
            await writes.restoreRelation(
              ctx,
              line.className as string,
              line.owningId as string,
              line.field as string,
              line.relatedIds as string[],
            );
          }
        } catch (err) {
          const code = err instanceof BdsError ? EXIT.badInput : 1;
          throw new TransferError((err as Error).message, code, lineNo);
        }
      }
    });
  };

  for (let line = await next(); line; line = await next()) {
    if (line.type !== 'row' && line.type !== 'relation') await flush();
    switch (line.type) {
      case 'config': {
        const params = line.params as Record<string, unknown>;
        const masterKeyOnly = line.masterKeyOnly as Record<string, boolean>;
        if (Object.keys(params).length === 0) break;
        written.params = Object.keys(params);
        await writes.updateConfig(ctx, params, masterKeyOnly);
        break;
      }
      case 'schema': {
        const className = line.className as string;
        const existing = schemas.get(className);
        const [first, ...rest] = schemaDocs(line, existing);
        if (existing) {
          written.changed.set(className, existing);
          await writes.updateClass(ctx, className, first!);
        } else {
          await writes.createClass(ctx, className, first!);
          written.created.push(className);
        }
        for (const doc of rest) await writes.updateClass(ctx, className, doc);
        break;
      }
      case 'row':
      case 'relation':
        batch.push({ n, line });
        if (batch.length >= ROW_PAGE) await flush();
        break;
      case 'file': {
        const chunks = line.chunks as number;
        // The bytes stream from the chunk lines that follow, as the adapter takes them.
        async function* source(): AsyncIterable<Uint8Array> {
          for (let i = 0; i < chunks; i++) {
            const chunk = await next();
            yield Buffer.from((chunk!.base64 as string) ?? '', 'base64');
          }
        }
        written.files.push(line.name as string);
        await files.save(
          line.name as string,
          line.contentType as string,
          source(),
          line.size as number,
          line.createdAt as string,
          { metadata: (line.metadata ?? {}) as FileStrings, tags: (line.tags ?? {}) as FileStrings },
        );
        break;
      }
    }
  }
  await flush();
}

/** Takes back what a failed import wrote into its (empty) target, through the pipeline. */
async function undo(data: Data, files: TransferFiles, written: Written): Promise<void> {
  const { writes } = data;
  const { store, schemas } = data.core;
  const ctx = ctxOf(MASTER, 'import');
  for (const name of written.files) await files.delete(name);
  for (const schema of schemas.all()) {
    const rows = await store.find(schema, { where: MATCH_ALL, order: [], limit: 1, skip: 0 }, schemas.lookup);
    if (rows.length > 0) await writes.purge(ctx, schema.className);
  }
  for (const className of [...written.created].reverse()) await writes.deleteClass(ctx, className);
  for (const [className, before] of written.changed) {
    const now = schemas.get(className);
    if (!now) continue;
    const fields: Record<string, unknown> = {};
    for (const name of Object.keys(now.fields)) if (!before.fields[name]) fields[name] = { __op: 'Delete' };
    const indexes: Record<string, unknown> = {};
    const later: Record<string, unknown> = {};
    for (const [name, keys] of Object.entries(now.indexes)) {
      if (JSON.stringify(before.indexes[name]) === JSON.stringify(keys)) continue;
      indexes[name] = { __op: 'Delete' };
      if (before.indexes[name]) later[name] = before.indexes[name];
    }
    for (const [name, keys] of Object.entries(before.indexes)) if (!now.indexes[name]) indexes[name] = keys;
    await writes.updateClass(ctx, className, {
      fields,
      indexes,
      classLevelPermissions: before.classLevelPermissions,
    });
    if (Object.keys(later).length > 0) await writes.updateClass(ctx, className, { indexes: later });
  }
  if (written.params.length > 0) {
    const params = Object.fromEntries(written.params.map((name) => [name, { __op: 'Delete' }]));
    await writes.updateConfig(ctx, params, {});
  }
}
