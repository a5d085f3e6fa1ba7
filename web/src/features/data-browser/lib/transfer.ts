/** Streaming export (keyset pages -> Blob parts) and import (file stream -> chunks of rows to the bff). */

import type { Where } from '../../../lib/filter.ts';
import {
  columnsOf,
  isPlainObject,
  READ_ONLY_FIELDS,
  type Row,
  type SchemaDoc,
  SYSTEM_FIELDS,
  typeOf,
} from '../../../lib/wire.ts';
import {
  CsvParser,
  type CsvRecord,
  csvCell,
  csvHeader,
  csvLine,
  csvValue,
  isBlankRecord,
  JsonEntriesParser,
  type JsonEntry,
} from './csv.ts';
import { DEFAULT_SORT, pageRequest } from './keyset.ts';

export const EXPORT_PAGE = 1000;

export type Fetcher = (req: { where: Where; order: string; limit: number; skip?: number }) => Promise<Row[]>;

/** Pages through the class by objectId and returns Blob parts; never holds more than one page of rows. */
export async function exportRows(
  format: 'csv' | 'json',
  schema: SchemaDoc,
  where: Where,
  fetchPage: Fetcher,
  onProgress: (done: number) => void,
  signal?: AbortSignal,
): Promise<Blob> {
  const cols = columnsOf(schema).filter((c) => typeOf(schema, c) !== 'Relation');
  const parts: BlobPart[] = [format === 'csv' ? csvLine(cols) : '[\n'];
  let last: Row | undefined;
  let done = 0;
  for (let i = 0; ; i++) {
    if (signal?.aborted) throw new Error('Export cancelled.');
    const req = pageRequest(where, DEFAULT_SORT, i, EXPORT_PAGE, last);
    const rows = await fetchPage(req);
    if (rows.length === 0) break;
    let text = '';
    for (const r of rows) {
      if (format === 'csv') text += csvLine(cols.map((c) => csvCell(typeOf(schema, c), r[c])));
      else text += `${done === 0 && text === '' ? '' : ',\n'}${JSON.stringify(r)}`;
    }
    parts.push(new Blob([text]));
    done += rows.length;
    onProgress(done);
    last = rows[rows.length - 1];
    if (rows.length < EXPORT_PAGE) break;
  }
  if (format === 'json') parts.push('\n]\n');
  return new Blob(parts, { type: format === 'csv' ? 'text/csv' : 'application/json' });
}

export interface Rejected {
  line: number;
  reason: string;
}

export interface ImportSummary {
  created: number;
  rejected: Rejected[];
  rejectedCount: number;
}

/** Rows per request to the bff, and requests on their way at once. */
export const IMPORT_CHUNK = 500;
export const IMPORT_IN_FLIGHT = 2;
/** Rejected rows the browser keeps to report; the count is always exact. */
const MAX_REASONS = 1000;

/** How to read a file into a class, as the mapping step settled it. */
export interface ImportPlan {
  format: 'csv' | 'json';
  /** The class's schema, with the columns the mapping step adds. */
  schema: SchemaDoc;
  /** Columns of the file that are left out. */
  skip: ReadonlySet<string>;
  /** Send the file's objectIds (the service keeps them for the console's master key). */
  keepObjectIds: boolean;
}

/** Only columns the (mapped) schema has: an import never adds a column behind the user's back. */
function writable(plan: ImportPlan, field: string): boolean {
  if (plan.skip.has(field)) return false;
  if (field === 'objectId') return plan.keepObjectIds;
  if (READ_ONLY_FIELDS.has(field)) return false;
  return (field === 'ACL' || field in plan.schema.fields) && typeOf(plan.schema, field) !== 'Relation';
}

type Converted = { ok: true; fields: Record<string, unknown> } | { ok: false; reason: string };

/** CSV record -> row fields, by the header and the class's field types. */
export function csvRecordToFields(
  schema: SchemaDoc,
  header: string[],
  record: string[],
  plan: ImportPlan = { format: 'csv', schema, skip: new Set(), keepObjectIds: false },
): Converted {
  const fields: Record<string, unknown> = {};
  for (let i = 0; i < header.length; i++) {
    const name = header[i]!;
    if (!writable(plan, name)) continue;
    const text = record[i] ?? '';
    if (name === 'objectId') {
      if (text !== '') fields.objectId = text;
      continue;
    }
    const r = csvValue(typeOf(plan.schema, name), text, plan.schema.fields[name]?.targetClass);
    if (!r.ok) return { ok: false, reason: `${name}: ${r.error}` };
    if (r.value !== undefined) fields[name] = r.value;
  }
  return { ok: true, fields };
}

const kindOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'string' ? 'a string' : `a ${typeof v}`;

export function jsonRowToFields(plan: ImportPlan, row: unknown): Converted {
  if (!isPlainObject(row)) return { ok: false, reason: `not a JSON object (${kindOf(row)})` };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (!writable(plan, k)) continue;
    // createdAt-style strings in Date fields are accepted too
    if (typeOf(plan.schema, k) === 'Date' && typeof v === 'string') fields[k] = { __type: 'Date', iso: v };
    else fields[k] = v;
  }
  return { ok: true, fields };
}

export interface ImportRow {
  line: number;
  fields: Record<string, unknown>;
}

/** Sends one chunk of rows; answers how many were created and which lines the service refused. */
export type RowSender = (rows: ImportRow[]) => Promise<{ created: number; rejected: Rejected[] }>;

export interface ImportProgress {
  /** Rows the service has answered for (created or refused). */
  written: number;
  created: number;
  /** Rows read from the file so far. */
  read: number;
  bytes: number;
}

/**
 * A field of the file that the class has no column for and the mapping step did not list (a JSON
 * field first seen after the sampled start of the file): left out of the rows, and reported.
 */
export interface UnknownColumn {
  name: string;
  /** The file line of the first row that has it. */
  line: number;
  /** Rows that have it. */
  rows: number;
}

/** Unknown columns reported per import; names are cut to this length. */
export const MAX_UNKNOWN_COLUMNS = 100;
export const MAX_COLUMN_NAME = 200;

export interface StreamResult {
  created: number;
  /** Rows read from the file. */
  rows: number;
  /** Rows the browser could not read (bad cells, entries that are not objects), first MAX_REASONS. */
  unread: Rejected[];
  unreadCount: number;
  /** Rows the service refused. */
  refused: number;
  /** Fields left out because the class has no such column, in the order first seen. */
  unknownColumns: UnknownColumn[];
}

/** A field that is neither a column of the (mapped) class, nor skipped, nor a system field. */
function isUnknown(plan: ImportPlan, field: string): boolean {
  return (
    !plan.skip.has(field) &&
    !(field in plan.schema.fields) &&
    !(SYSTEM_FIELDS as readonly string[]).includes(field)
  );
}

/**
 * Streams the file: parses it chunk by chunk, converts rows by the plan, and sends them in chunks
 * of IMPORT_CHUNK with IMPORT_IN_FLIGHT requests on their way; progress counts rows written.
 */
export async function importStream(
  plan: ImportPlan,
  stream: ReadableStream<Uint8Array>,
  send: RowSender,
  onProgress: (p: ImportProgress) => void,
): Promise<StreamResult> {
  const result: StreamResult = {
    created: 0,
    rows: 0,
    unread: [],
    unreadCount: 0,
    refused: 0,
    unknownColumns: [],
  };
  const unknown = new Map<string, UnknownColumn>();
  const noteUnknown = (line: number, fields: Iterable<string>) => {
    for (const f of fields) {
      if (!isUnknown(plan, f)) continue;
      const name = f.slice(0, MAX_COLUMN_NAME);
      const seen = unknown.get(name);
      if (seen) seen.rows++;
      else if (unknown.size < MAX_UNKNOWN_COLUMNS) unknown.set(name, { name, line, rows: 1 });
    }
  };
  const progress: ImportProgress = { written: 0, created: 0, read: 0, bytes: 0 };
  const unread = (line: number, reason: string) => {
    result.unreadCount++;
    if (result.unread.length < MAX_REASONS) result.unread.push({ line, reason });
  };
  const inflight = new Set<Promise<void>>();
  const pending: ImportRow[] = [];
  const dispatch = async (batch: ImportRow[]) => {
    const p = send(batch).then((r) => {
      result.created += r.created;
      result.refused += batch.length - r.created;
      progress.written += batch.length;
      progress.created = result.created;
      onProgress({ ...progress });
    });
    inflight.add(p);
    void p.then(
      () => inflight.delete(p),
      () => undefined,
    );
    if (inflight.size >= IMPORT_IN_FLIGHT) await Promise.race(inflight);
  };
  const take = (line: number, r: Converted) => {
    result.rows++;
    if (r.ok) pending.push({ line, fields: r.fields });
    else unread(line, r.reason);
  };

  const csv = new CsvParser();
  const json = new JsonEntriesParser();
  let header: string[] | null = null;
  const takeCsv = (records: CsvRecord[]) => {
    for (const rec of records) {
      if (!header) {
        header = csvHeader(rec);
        continue;
      }
      if (isBlankRecord(rec)) continue;
      take(rec.line, csvRecordToFields(plan.schema, header, rec.cells, plan));
    }
  };
  const takeJson = (entries: JsonEntry[]) => {
    for (const e of entries) {
      if (e.error !== undefined) take(e.line, { ok: false, reason: e.error });
      else {
        if (isPlainObject(e.value)) noteUnknown(e.line, Object.keys(e.value));
        take(e.line, jsonRowToFields(plan, e.value));
      }
    }
  };
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value: chunk, done } = await reader.read();
    const text = done ? decoder.decode() : decoder.decode(chunk, { stream: true });
    if (plan.format === 'csv') takeCsv([...csv.push(text), ...(done ? csv.end() : [])]);
    else takeJson([...json.push(text), ...(done ? json.end() : [])]);
    if (!done) progress.bytes += chunk.byteLength;
    progress.read = result.rows;
    while (pending.length >= IMPORT_CHUNK || (done && pending.length > 0))
      await dispatch(pending.splice(0, IMPORT_CHUNK));
    onProgress({ ...progress });
    if (done) break;
  }
  await Promise.all(inflight);
  result.unknownColumns = [...unknown.values()];
  return result;
}

/**
 * Reads a whole CSV file before anything is written (no column added, no row sent): the number
 * of data rows it holds, or a CsvError naming the first line that is not well-formed.
 */
export async function checkCsv(stream: ReadableStream<Uint8Array>): Promise<{ rows: number }> {
  const parser = new CsvParser();
  let header = false;
  let rows = 0;
  const take = (records: CsvRecord[]) => {
    for (const rec of records) {
      if (!header) {
        csvHeader(rec);
        header = true;
      } else if (!isBlankRecord(rec)) rows++;
    }
  };
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        take([...parser.push(decoder.decode()), ...parser.end()]);
        return { rows };
      }
      take(parser.push(decoder.decode(value, { stream: true })));
    }
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    throw err;
  }
}

/** What the mapping step needs from the start of a file: its columns and sample values of each. */
export interface FileSample {
  columns: string[];
  values: Record<string, unknown[]>;
}

const SAMPLE_ROWS = 200;

/** Reads the columns and up to SAMPLE_ROWS rows from the text at the start of a file. */
export function sampleOf(format: 'csv' | 'json', text: string): FileSample {
  const values: Record<string, unknown[]> = {};
  const columns: string[] = [];
  const see = (k: string, v: unknown) => {
    if (!(k in values)) {
      values[k] = [];
      columns.push(k);
    }
    values[k]!.push(v);
  };
  if (format === 'csv') {
    const [head, ...records] = new CsvParser().push(text);
    const header = head ? csvHeader(head) : [];
    for (const h of header) see(h, undefined);
    for (const rec of records.slice(0, SAMPLE_ROWS))
      header.forEach((h, i) => {
        values[h]!.push(rec.cells[i]);
      });
  } else {
    const entries = new JsonEntriesParser().push(text).slice(0, SAMPLE_ROWS);
    for (const e of entries)
      if (isPlainObject(e.value)) for (const [k, v] of Object.entries(e.value)) see(k, v);
  }
  return { columns, values };
}
