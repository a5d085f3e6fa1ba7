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

/**
 * Incremental CSV parser: feed text chunks with `push`, get complete records back; `end`
 * returns the last record. Quoted fields may span chunks and lines.
 */
export class CsvParser {
  private field = '';
  private record: string[] = [];
  private inQuotes = false;
  /** A quote seen inside a quoted field: either an escaped quote or the field's end. */
  private quotePending = false;
  private sawCr = false;
  private any = false;

  push(chunk: string): string[][] {
    const out: string[][] = [];
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (this.sawCr) {
        this.sawCr = false;
        if (c === '\n') continue;
      }
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
          else this.field += c;
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
        this.record.push(this.field);
        out.push(this.record);
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

  end(): string[][] {
    if (this.quotePending) {
      this.quotePending = false;
      this.inQuotes = false;
    }
    if (!this.any && this.field === '' && this.record.length === 0) return [];
    this.record.push(this.field);
    const last = this.record;
    this.record = [];
    this.field = '';
    this.any = false;
    return [last];
  }
}

export function parseCsv(text: string): string[][] {
  const p = new CsvParser();
  return [...p.push(text), ...p.end()];
}

/**
 * Incremental reader of a JSON array of objects (`[{...},{...}]`) or of newline-delimited JSON:
 * yields each top-level object as soon as its closing brace arrives.
 */
export class JsonRowsParser {
  private buf = '';
  private depth = 0;
  private inString = false;
  private escape = false;
  private start = -1;

  push(chunk: string): unknown[] {
    const out: unknown[] = [];
    const base = this.buf.length;
    this.buf += chunk;
    for (let i = base; i < this.buf.length; i++) {
      const c = this.buf[i]!;
      if (this.inString) {
        if (this.escape) this.escape = false;
        else if (c === '\\') this.escape = true;
        else if (c === '"') this.inString = false;
        continue;
      }
      if (c === '"') this.inString = true;
      else if (c === '{') {
        if (this.depth === 0) this.start = i;
        this.depth++;
      } else if (c === '}') {
        this.depth--;
        if (this.depth === 0 && this.start >= 0) {
          out.push(JSON.parse(this.buf.slice(this.start, i + 1)));
          this.start = -1;
        }
      }
    }
    // Drop consumed text so memory stays bounded by one row.
    if (this.depth === 0) this.buf = '';
    else if (this.start > 0) {
      this.buf = this.buf.slice(this.start);
      this.start = 0;
    }
    return out;
  }

  end(): unknown[] {
    if (this.depth !== 0) throw new Error('unexpected end of JSON: an object is not closed');
    return [];
  }
}
