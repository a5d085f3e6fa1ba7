import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Data } from '../data/data.ts';
import { MATCH_ALL, type QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import { type ClassSchema, USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';
import { byClassName } from '../schema/registry.ts';
import type { RelationMember, SchemaLookup } from '../storage/adapter.ts';
import {
  CHUNK_BYTES,
  type EndLine,
  type ExportSummary,
  FORMAT,
  FORMAT_VERSION,
  type HeaderLine,
  type InternalColumns,
  RELATION_PAGE,
  ROW_PAGE,
  type TransferFiles,
} from './format.ts';

/** Internal columns exported with the rows of their class. */
export const EXPORTED_INTERNAL: InternalColumns = { _User: Object.values(USER_INTERNAL_COLUMNS) };

export interface ExportOptions {
  /** The version of the service, for the header. */
  service: string;
  /** Whether to export `_Session` rows (the schema of `_Session` is exported either way). */
  sessions: boolean;
  /** The header's time (tests pin it). */
  now?: () => Date;
}

/**
 * Writes the whole app to `out` as NDJSON (format.ts), streaming: rows are read a page at a time
 * by objectId, relation members and file bytes likewise, and every line waits for `out` to drain
 * when it is full. Reads the store directly as the master would, internal columns included.
 * The config, the classes, their rows, internal columns and relation members are read in one
 * snapshot of the store (`store.snapshot`): writes made meanwhile are in none of them.
 * The caller opens and ends `out`.
 */
export async function exportApp(
  data: Data,
  files: TransferFiles,
  out: Writable,
  options: ExportOptions,
): Promise<ExportSummary> {
  const { store } = data.core;
  const summary: ExportSummary = { lines: 0, classes: 0, rows: 0, relations: 0, files: 0 };
  let failed: Error | undefined;
  const onError = (err: Error) => {
    failed = err;
  };
  out.on('error', onError);
  const write = async (line: unknown) => {
    if (failed) throw failed;
    summary.lines++;
    if (!out.write(`${JSON.stringify(line)}\n`)) {
      // Backpressure: wait until the stream takes more (`once` rejects if it fails meanwhile).
      await once(out, 'drain');
      if (failed) throw failed;
    }
  };

  try {
    const header: HeaderLine = {
      type: 'header',
      format: FORMAT,
      version: FORMAT_VERSION,
      service: options.service,
      exportedAt: (options.now?.() ?? new Date()).toISOString(),
      sessions: options.sessions,
    };
    await write(header);
    await store.snapshot(async () => {
      const config = await store.getConfig();
      await write({ type: 'config', params: config.params, masterKeyOnly: config.masterKeyOnly });

      // The classes as stored in the snapshot (not the registry, which may be older or newer), in
      // the registry's order, so two exports of the same app are the same file.
      const classes = (await store.loadSchemas()).sort(byClassName);
      const byName = new Map(classes.map((schema) => [schema.className, schema]));
      const lookup: SchemaLookup = (className) => byName.get(className);
      for (const schema of classes) {
        await write({
          type: 'schema',
          className: schema.className,
          fields: schema.fields,
          classLevelPermissions: schema.classLevelPermissions,
          indexes: schema.indexes,
        });
      }
      summary.classes = classes.length;

      for (const schema of classes) {
        if (schema.className !== '_Session' || options.sessions) {
          summary.rows += await exportRows(data, schema, lookup, write);
        }
        for (const [field, def] of Object.entries(schema.fields)) {
          if (def.type === 'Relation') summary.relations += await exportRelation(data, schema, field, write);
        }
      }
    });

    // Files are read after the snapshot, as they are by then: they may live outside the database
    // (a directory), and the database adapter may create its tables on first use (a write).
    for await (const file of files.list()) {
      const chunks = Math.ceil(file.size / CHUNK_BYTES);
      await write({
        type: 'file',
        name: file.name,
        contentType: file.contentType,
        size: file.size,
        etag: file.etag,
        createdAt: file.createdAt,
        // Only when set: the lines of a file without them are as before they were kept.
        ...(Object.keys(file.metadata).length > 0 ? { metadata: file.metadata } : {}),
        ...(Object.keys(file.tags).length > 0 ? { tags: file.tags } : {}),
        chunks,
      });
      let seq = 0;
      if (file.size > 0) {
        for await (const bytes of rechunk(files.read(file, 0, file.size - 1), CHUNK_BYTES)) {
          await write({ type: 'chunk', name: file.name, seq: seq++, base64: bytes.toString('base64') });
        }
      }
      if (seq !== chunks) throw new Error(`File ${file.name} ended after ${seq} of ${chunks} chunks.`);
      summary.files++;
    }

    const { classes: classCount, rows, relations, files: fileCount } = summary;
    const end: EndLine = {
      type: 'end',
      lines: summary.lines + 1,
      classes: classCount,
      rows,
      relations,
      files: fileCount,
    };
    await write(end);
    return summary;
  } finally {
    out.off('error', onError);
  }
}

/** The rows of a class in objectId order, a page per query; answers how many. */
async function exportRows(
  data: Data,
  schema: ClassSchema,
  lookup: SchemaLookup,
  write: (line: unknown) => Promise<void>,
): Promise<number> {
  const { store } = data.core;
  const internalColumns = EXPORTED_INTERNAL[schema.className];
  const relationFields = Object.entries(schema.fields)
    .filter(([, def]) => def.type === 'Relation')
    .map(([name]) => name);
  let after: string | undefined;
  let count = 0;
  for (;;) {
    const where: QueryNode =
      after === undefined ? MATCH_ALL : { type: 'compare', path: ['objectId'], op: 'gt', value: after };
    const page = await store.find(
      schema,
      { where, order: [{ path: ['objectId'], descending: false }], limit: ROW_PAGE, skip: 0 },
      lookup,
    );
    const internal = new Map<string, Record<string, string>>();
    if (internalColumns && page.length > 0) {
      const ids = page.map((r) => r.objectId as string);
      for (const raw of await store.findInternalByIds(schema.className, ids, [...internalColumns])) {
        const values: Record<string, string> = {};
        for (const column of internalColumns) {
          if (raw[column] !== null && raw[column] !== undefined) values[column] = String(raw[column]);
        }
        if (Object.keys(values).length > 0) internal.set(String(raw.objectId), values);
      }
    }
    for (const row of page) {
      // A Relation field's value in a row is only a marker; its members have lines of their own.
      const stored: Row = { ...row };
      for (const name of relationFields) delete stored[name];
      const line: Record<string, unknown> = { type: 'row', className: schema.className, row: stored };
      const values = internal.get(row.objectId as string);
      if (values) line.internal = values;
      await write(line);
    }
    count += page.length;
    if (page.length < ROW_PAGE) return count;
    after = page.at(-1)!.objectId as string;
  }
}

/**
 * The members of one Relation field, in (owningId, relatedId) order: one line per owning row and
 * up to RELATION_PAGE members (a row with more has several lines). Answers how many members.
 */
async function exportRelation(
  data: Data,
  schema: ClassSchema,
  field: string,
  write: (line: unknown) => Promise<void>,
): Promise<number> {
  const { store } = data.core;
  let after: RelationMember | null = null;
  let owningId: string | undefined;
  let relatedIds: string[] = [];
  let count = 0;
  const flush = async () => {
    if (owningId === undefined || relatedIds.length === 0) return;
    await write({ type: 'relation', className: schema.className, field, owningId, relatedIds });
    relatedIds = [];
  };
  for (;;) {
    const page = await store.relationMembers(schema.className, field, after, RELATION_PAGE);
    for (const member of page) {
      if (member.owningId !== owningId || relatedIds.length === RELATION_PAGE) {
        await flush();
        owningId = member.owningId;
      }
      relatedIds.push(member.relatedId);
    }
    count += page.length;
    if (page.length < RELATION_PAGE) break;
    after = page.at(-1)!;
  }
  await flush();
  return count;
}

/** Cuts a stream of bytes into pieces of exactly `size` bytes (the last one shorter). */
async function* rechunk(source: AsyncIterable<Uint8Array>, size: number): AsyncIterable<Buffer> {
  let pending: Buffer[] = [];
  let pendingSize = 0;
  for await (const piece of source) {
    let chunk = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (pendingSize + chunk.byteLength >= size) {
      const take = size - pendingSize;
      pending.push(chunk.subarray(0, take));
      yield Buffer.concat(pending, size);
      pending = [];
      pendingSize = 0;
      chunk = chunk.subarray(take);
    }
    if (chunk.byteLength > 0) {
      pending.push(chunk);
      pendingSize += chunk.byteLength;
    }
  }
  if (pendingSize > 0) yield Buffer.concat(pending, pendingSize);
}
