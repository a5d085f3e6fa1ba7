import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { StoredFile } from '../storage/adapter.ts';

/**
 * The export file (docs/transfer.md): NDJSON, one JSON object per line, each with a `type`, in
 * this order: `header`, `config`, one `schema` per class, per class its `row`s then its
 * `relation`s, per file a `file` line then its `chunk`s, and `end` last.
 */
export const FORMAT = 'bds-export';
export const FORMAT_VERSION = 1;

/** Rows read from the store per query, and restored per transaction. */
export const ROW_PAGE = 500;
/** Relation members read per query, and the most one `relation` line holds. */
export const RELATION_PAGE = 1000;
/** File bytes per `chunk` line (256 KiB once in base64). */
export const CHUNK_BYTES = 192 * 1024;

/** The built-in classes' internal columns an export carries (password hashes, tokens). */
export type InternalColumns = Record<string, readonly string[]>;

export interface HeaderLine {
  type: 'header';
  format: typeof FORMAT;
  version: number;
  /** The version of the service that wrote the file. */
  service: string;
  exportedAt: string;
  /** Whether `_Session` rows are in the file. */
  sessions: boolean;
}

export interface EndLine {
  type: 'end';
  /** Lines in the file, this one included: a file cut short, or with lines lost, is refused. */
  lines: number;
  classes: number;
  rows: number;
  relations: number;
  files: number;
}

export interface ExportSummary {
  lines: number;
  classes: number;
  rows: number;
  relations: number;
  files: number;
}

/** Exit codes of `export` and `import` (the CLI's own are 0, 1 for a failure and 2 for bad options). */
export const EXIT = { badInput: 3, notEmpty: 4 } as const;

/** A refusal of the command, with the line of the file it concerns (1-based) when there is one. */
export class TransferError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.badInput,
    readonly line?: number,
  ) {
    super(line === undefined ? message : `line ${line}: ${message}`);
    this.name = 'TransferError';
  }
}

/**
 * Where file bytes are read and written (the service's file adapter, filesystem or database);
 * `validName` is the file service's own rule for a stored name, checked before anything is written.
 */
export interface TransferFiles {
  list(): AsyncIterable<StoredFile>;
  read(file: StoredFile, start: number, end: number): AsyncIterable<Uint8Array>;
  save(
    name: string,
    contentType: string,
    source: AsyncIterable<Uint8Array>,
    limit: number,
    createdAt: string,
    fileData: Pick<StoredFile, 'metadata' | 'tags'>,
  ): Promise<StoredFile>;
  /** A stored file, or undefined (the import from parse-server stores each file once). */
  info?(name: string): Promise<StoredFile | undefined>;
  /** Removes a file an import wrote, when the import fails. */
  delete(name: string): Promise<boolean>;
  validName(name: string): boolean;
}

/** The lines of a file, one at a time (never the whole file in memory); `\r\n` ends a line too. */
export function readLines(file: string): AsyncIterable<string> {
  const input = createReadStream(file, { encoding: 'utf8' });
  return createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
}
