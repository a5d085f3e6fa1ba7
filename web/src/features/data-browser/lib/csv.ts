/** CSV formatting and an incremental (chunk by chunk) parser, RFC 4180 style. */
import { editText, type FieldType, isPlainObject, type ParseResult, parseEdit } from './wire.ts';

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
  if (type === 'File' || type === 'Bytes' || type === 'Polygon') {
    if (text.trim() === '') return { ok: true, value: undefined };
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

/** A CSV record and the file line it starts on (1 = the header). */
export interface CsvRecord {
  line: number;
  cells: string[];
}

/**
 * Incremental CSV parser: feed text chunks with `push`, get complete records back; `end`
 * returns the last record. Quoted fields may span chunks and lines; each record carries the line
 * it starts on, so a rejected row is reported where an editor shows it.
 */
export class CsvParser {
  private field = '';
  private record: string[] = [];
  private inQuotes = false;
  /** A quote seen inside a quoted field: either an escaped quote or the field's end. */
  private quotePending = false;
  private sawCr = false;
  private any = false;
  private line = 1;
  private recordLine = 1;

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
          // fall through to unquoted handling of c
        } else {
          if (c === '"') this.quotePending = true;
          else {
            this.field += c;
            if (c === '\n') this.line++;
          }
          continue;
        }
      }
      if (c === '"' && this.field === '') {
        this.inQuotes = true;
        this.any = true;
      } else if (c === ',') {
        this.record.push(this.field);
        this.field = '';
        this.any = true;
      } else if (c === '\n' || c === '\r') {
        this.sawCr = c === '\r';
        this.line++;
        this.record.push(this.field);
        out.push({ line: this.recordLine, cells: this.record });
        this.record = [];
        this.field = '';
        this.any = false;
      } else {
        this.field += c;
        this.any = true;
      }
    }
    return out;
  }

  end(): CsvRecord[] {
    if (this.quotePending) {
      this.quotePending = false;
      this.inQuotes = false;
    }
    if (!this.any && this.field === '' && this.record.length === 0) return [];
    this.record.push(this.field);
    const last = { line: this.recordLine, cells: this.record };
    this.record = [];
    this.field = '';
    this.any = false;
    return [last];
  }
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
