/** CSV formatting and an incremental (chunk by chunk) parser, RFC 4180 style. */
import { editText, type FieldType, isPlainObject, type ParseResult, parseEdit } from '../../../lib/wire.ts';

export function csvEscape(text: string): string {
  return /[",\r\n]/.test(text) || /^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const csvLine = (cells: string[]): string => cells.map(csvEscape).join(',') + '\r\n';

/** Text of one value in a CSV cell: the editor's text form, compact JSON for structured values. */
export function csvCell(type: FieldType, v: unknown): string {
  if (v === undefined || v === null) return '';
  if (type === 'Relation') return '';
  if (
    type === 'Object' ||
    type === 'Array' ||
    type === 'ACL' ||
    type === 'Polygon' ||
    type === 'Bytes' ||
    type === 'File'
  )
    return JSON.stringify(v);
  if (type === 'String' && typeof v !== 'string') return JSON.stringify(v);
  return editText(type, v);
}

export function csvValue(type: FieldType, text: string, targetClass?: string): ParseResult {
  // An empty cell is no value: the row is created without the field.
  if (text.trim() === '') return { ok: true, value: undefined };
  if (type === 'File' || type === 'Bytes' || type === 'Polygon') {
    try {
      const v = JSON.parse(text);
      return isPlainObject(v)
        ? { ok: true, value: v }
        : { ok: false, error: `expected a ${type} JSON object` };
    } catch (err) {
      return { ok: false, error: `invalid JSON: ${(err as Error).message}` };
    }
  }
  return parseEdit(type, text, targetClass);
}

/** A file that is not well-formed CSV: the line where the problem is, and what it is. */
export class CsvError extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`);
    this.name = 'CsvError';
  }
}

/** A CSV record and the file line it starts on (1 = the header). */
export interface CsvRecord {
  line: number;
  cells: string[];
}

/** A blank line: one empty, unquoted field. Skipped by readers, never a row. */
export const isBlankRecord = (r: CsvRecord): boolean => r.cells.length === 1 && r.cells[0] === '';

const fieldsText = (n: number) => `${n} field${n === 1 ? '' : 's'}`;

/**
 * Incremental CSV parser (RFC 4180): feed text chunks with `push`, get complete records back;
 * `end` returns the last record. Quoted fields may span chunks and lines; each record carries the
 * line it starts on, so a rejected row is reported where an editor shows it.
 *
 * Strict: a file that is not well-formed throws a CsvError naming the line and the problem (a
 * quoted field never closed, text after a closing quote, a quote inside an unquoted field, a
 * record whose number of fields differs from the first record's). Guessing what such a file
 * meant would store values nobody wrote.
 */
export class CsvParser {
  private field = '';
  private record: string[] = [];
  private inQuotes = false;
  /** A quote seen inside a quoted field: either an escaped quote or the field's end. */
  private quotePending = false;
  /** The current field was quoted (and closed): nothing but a delimiter may follow. */
  private quoted = false;
  private sawCr = false;
  private any = false;
  private line = 1;
  private recordLine = 1;
  /** The line where the open quoted field started. */
  private quoteLine = 1;
  /** Fields of the first record: every later record has as many (blank lines aside). */
  private width: number | null = null;

  push(chunk: string): CsvRecord[] {
    const out: CsvRecord[] = [];
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (this.sawCr) {
        this.sawCr = false;
        if (c === '\n') continue;
      }
      if (!this.any && this.record.length === 0 && this.field === '') this.recordLine = this.line;
      if (this.inQuotes) {
        if (this.quotePending) {
          this.quotePending = false;
          if (c === '"') {
            this.field += '"';
            continue;
          }
          this.inQuotes = false;
          this.quoted = true;
          // c is handled below: it must end the field
        } else {
          if (c === '"') this.quotePending = true;
          else {
            this.field += c;
            if (c === '\n') this.line++;
          }
          continue;
        }
      }
      if (c === ',') {
        this.record.push(this.field);
        this.field = '';
        this.quoted = false;
        this.any = true;
      } else if (c === '\n' || c === '\r') {
        this.sawCr = c === '\r';
        this.record.push(this.field);
        out.push(this.close());
        this.line++;
      } else if (this.quoted) {
        throw new CsvError(this.line, 'text after the closing quote of a field');
      } else if (c === '"') {
        if (this.field !== '')
          throw new CsvError(this.line, 'a quote inside a field that does not start with one');
        this.inQuotes = true;
        this.quoteLine = this.line;
        this.any = true;
      } else {
        this.field += c;
        this.any = true;
      }
    }
    return out;
  }

  end(): CsvRecord[] {
    if (this.inQuotes && !this.quotePending)
      throw new CsvError(this.quoteLine, 'a quoted field is not closed before the end of the file');
    this.inQuotes = false;
    this.quotePending = false;
    if (!this.any && this.field === '' && this.record.length === 0) return [];
    this.record.push(this.field);
    return [this.close()];
  }

  /** The record just read, checked against the first record's number of fields. */
  private close(): CsvRecord {
    const rec = { line: this.recordLine, cells: this.record };
    const blank = !this.any && isBlankRecord(rec);
    this.record = [];
    this.field = '';
    this.quoted = false;
    this.any = false;
    if (!blank) {
      if (this.width === null) this.width = rec.cells.length;
      else if (rec.cells.length !== this.width)
        throw new CsvError(rec.line, `${fieldsText(rec.cells.length)} where the header has ${this.width}`);
    }
    return rec;
  }
}

/** The column names of a CSV header, trimmed; a name listed twice is refused (which one is meant?). */
export function csvHeader(record: CsvRecord): string[] {
  const names = record.cells.map((h) => h.trim());
  const seen = new Set<string>();
  for (const name of names) {
    if (name !== '' && seen.has(name))
      throw new CsvError(record.line, `the column "${name}" appears twice in the header`);
    seen.add(name);
  }
  return names;
}

export function parseCsv(text: string): string[][] {
  const p = new CsvParser();
  return [...p.push(text), ...p.end()].map((r) => r.cells);
}

/** One entry of a JSON import: its value (any JSON, not only objects) or why it could not be read. */
export interface JsonEntry {
  /** The file line the entry starts on. */
  line: number;
  value?: unknown;
  error?: string;
}

const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\r' || c === '\n';

/**
 * Incremental reader of a JSON array (`[{...}, 2, "x"]`) or of newline-delimited JSON: yields
 * EVERY top-level entry with the line it starts on, so an entry that is not an object is
 * reported (by the caller), not dropped, and later line numbers stay right. Memory is bounded by
 * one entry.
 */
export class JsonEntriesParser {
  private mode: 'start' | 'array' | 'lines' | 'closed' = 'start';
  private line = 1;
  private entry = '';
  private entryLine = 0;
  private inEntry = false;
  /** The entry is a bare number, string, true, false or null: it ends at a delimiter. */
  private scalar = false;
  private depth = 0;
  private inString = false;
  private escape = false;
  private trailingReported = false;

  push(chunk: string): JsonEntry[] {
    const out: JsonEntry[] = [];
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (this.inEntry) {
        if (this.inString) {
          this.entry += c;
          if (this.escape) this.escape = false;
          else if (c === '\\') this.escape = true;
          else if (c === '"') this.inString = false;
          else if (c === '\n') this.line++;
          continue;
        }
        if (this.scalar) {
          if (c !== ',' && c !== ']' && !isSpace(c)) {
            this.entry += c;
            if (c === '"') this.inString = true;
            continue;
          }
          out.push(this.close());
          // the delimiter is handled below, outside the entry
        } else {
          this.entry += c;
          if (c === '"') this.inString = true;
          else if (c === '{' || c === '[') this.depth++;
          else if (c === '}' || c === ']') {
            if (--this.depth === 0) out.push(this.close());
          } else if (c === '\n') this.line++;
          continue;
        }
      }
      if (c === '\n') this.line++;
      if (isSpace(c)) continue;
      if (this.mode === 'start') {
        if (c === '[') {
          this.mode = 'array';
          continue;
        }
        this.mode = 'lines';
      }
      if (this.mode === 'array' && c === ',') continue;
      if (this.mode === 'array' && c === ']') {
        this.mode = 'closed';
        continue;
      }
      if (this.mode === 'closed') {
        if (!this.trailingReported) out.push({ line: this.line, error: 'text after the closing "]"' });
        this.trailingReported = true;
        continue;
      }
      this.inEntry = true;
      this.entry = c;
      this.entryLine = this.line;
      this.scalar = c !== '{' && c !== '[';
      this.depth = this.scalar ? 0 : 1;
      this.inString = c === '"';
    }
    return out;
  }

  end(): JsonEntry[] {
    if (this.inEntry) {
      if (this.scalar && !this.inString) return [this.close()];
      this.inEntry = false;
      return [{ line: this.entryLine, error: 'unexpected end of file: this entry is not closed' }];
    }
    if (this.mode === 'array') return [{ line: this.line, error: 'unexpected end of file: no closing "]"' }];
    return [];
  }

  private close(): JsonEntry {
    const text = this.entry;
    this.inEntry = false;
    this.entry = '';
    try {
      return { line: this.entryLine, value: JSON.parse(text) };
    } catch (err) {
      return { line: this.entryLine, error: `invalid JSON: ${(err as Error).message}` };
    }
  }
}
