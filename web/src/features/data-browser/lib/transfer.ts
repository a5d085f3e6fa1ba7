/** Streaming export (keyset pages -> Blob parts) and import (file stream -> batches of 50 creates). */

import { CsvParser, csvCell, csvLine, csvValue, JsonRowsParser } from './csv.ts';
import type { Where } from './filter.ts';
import { DEFAULT_SORT, pageRequest } from './keyset.ts';
import { columnsOf, isPlainObject, READ_ONLY_FIELDS, type Row, type SchemaDoc, typeOf } from './wire.ts';

export const EXPORT_PAGE = 1000;
export const IMPORT_BATCH = 50;

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

/** Fields the service sets itself or that cannot be written as values. */
function writable(schema: SchemaDoc, field: string): boolean {
  return !READ_ONLY_FIELDS.has(field) && typeOf(schema, field) !== 'Relation';
}

/** CSV record -> row fields, by the header and the class's field types. */
export function csvRecordToFields(
  schema: SchemaDoc,
  header: string[],
  record: string[],
): { ok: true; fields: Record<string, unknown> } | { ok: false; reason: string } {
  const fields: Record<string, unknown> = {};
  for (let i = 0; i < header.length; i++) {
    const name = header[i]!;
    if (!writable(schema, name)) continue;
    const text = record[i] ?? '';
    const spec = schema.fields[name];
    const r = csvValue(typeOf(schema, name), text, spec?.targetClass);
    if (!r.ok) return { ok: false, reason: `${name}: ${r.error}` };
    if (r.value !== undefined) fields[name] = r.value;
  }
  return { ok: true, fields };
}

export function jsonRowToFields(
  schema: SchemaDoc,
  row: unknown,
): { ok: true; fields: Record<string, unknown> } | { ok: false; reason: string } {
  if (!isPlainObject(row)) return { ok: false, reason: 'not a JSON object' };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (!writable(schema, k)) continue;
    // createdAt-style strings in Date fields are accepted too
    if (typeOf(schema, k) === 'Date' && typeof v === 'string') fields[k] = { __type: 'Date', iso: v };
    else fields[k] = v;
  }
  return { ok: true, fields };
}

export type Creator = (fields: Record<string, unknown>) => Promise<unknown>;

const MAX_REASONS = 500;

/** Reads the file as a stream, creates rows in batches of 50, reports progress in bytes and rows. */
export async function importStream(
  format: 'csv' | 'json',
  schema: SchemaDoc,
  stream: ReadableStream<Uint8Array>,
  create: Creator,
  onProgress: (bytes: number, rows: number) => void,
  errorOf: (err: unknown) => string,
): Promise<ImportSummary> {
  const summary: ImportSummary = { created: 0, rejected: [], rejectedCount: 0 };
  const reject = (line: number, reason: string) => {
    summary.rejectedCount++;
    if (summary.rejected.length < MAX_REASONS) summary.rejected.push({ line, reason });
  };
  const csv = new CsvParser();
  const json = new JsonRowsParser();
  let header: string[] | null = null;
  let line = 0;
  let pending: Array<{ line: number; fields: Record<string, unknown> }> = [];
  let bytes = 0;
  const flush = async () => {
    const batch = pending;
    pending = [];
    const results = await Promise.allSettled(batch.map((b) => create(b.fields)));
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') summary.created++;
      else reject(batch[i]!.line, errorOf(r.reason));
    });
    onProgress(bytes, summary.created + summary.rejectedCount);
  };
  const take = async (items: unknown[]) => {
    for (const item of items) {
      line++;
      let r: ReturnType<typeof jsonRowToFields>;
      if (format === 'csv') {
        const rec = item as string[];
        if (!header) {
          header = rec.map((h) => h.trim());
          continue;
        }
        if (rec.length === 1 && rec[0] === '') continue;
        r = csvRecordToFields(schema, header, rec);
      } else r = jsonRowToFields(schema, item);
      if (r.ok) pending.push({ line, fields: r.fields });
      else reject(line, r.reason);
      if (pending.length >= IMPORT_BATCH) await flush();
    }
  };
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value: chunk, done } = await reader.read();
    if (done) break;
    bytes += chunk.byteLength;
    const value = decoder.decode(chunk, { stream: true });
    try {
      await take(format === 'csv' ? csv.push(value) : json.push(value));
    } catch (err) {
      reject(line + 1, (err as Error).message);
      break;
    }
  }
  try {
    await take(format === 'csv' ? csv.end() : json.end());
  } catch (err) {
    reject(line + 1, (err as Error).message);
  }
  if (pending.length) await flush();
  onProgress(bytes, summary.created + summary.rejectedCount);
  return summary;
}
