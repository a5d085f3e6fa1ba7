import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import {
  type FileStrings,
  fileContentType,
  fileDataProblem,
  isIssuedFileName,
  isObject,
  isUploadName,
  MAX_UPLOAD_NAME,
  storedFileHeaders,
} from '@bds/client/protocol';
import type { ServiceOptions } from '../config/options.ts';
import { demandMaster } from '../data/authorize.ts';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Row } from '../kernel/records.ts';
import { USER_INTERNAL_COLUMNS } from '../kernel/schema.ts';
import { type FileAdapter, type FileData, fileTooLarge, NO_FILE_DATA, type StoredFile } from './adapter.ts';
import { DatabaseFileAdapter } from './db-adapter.ts';
import { FsFileAdapter } from './fs-adapter.ts';

export const UPLOAD_REFUSED = {
  public: 'File upload by public is disabled.',
  anonymous: 'File upload by anonymous user is disabled.',
  authenticated: 'File upload by authenticated user is disabled.',
} as const;

const fileNotFound = () => new BdsError(ErrorCode.OBJECT_NOT_FOUND, 'File not found.');

/** Deleting a file that is not there (the incumbent's code and text). */
export const FILE_NOT_DELETED = 'Could not delete file.';

/**
 * The incumbent stores a file under `<directory>/<name>`: a name with slashes, which the one name
 * rule of stored files (`isIssuedFileName`: downloads, deletes, File values, the console) refuses.
 */
export const DIRECTORY_REFUSED =
  'File directories are not supported by this service: a file is stored under the name its upload answers.';

/** An upload's bytes and what the request says of them, whichever form it came in. */
export interface UploadSource {
  bytes: AsyncIterable<Uint8Array>;
  /** The content type the request gives the file; a malformed or missing one is stored as bytes. */
  contentType: string | undefined;
  /** The size the request declares, when it does: more than the limit is refused before any byte is read. */
  size?: number;
  /** What the SDKs send to describe a file (its metadata, tags, a directory), as sent. */
  fileData?: { metadata?: unknown; tags?: unknown; directory?: unknown };
}

/**
 * The metadata and tags an upload keeps (absent or null: none), each by the one rule of
 * `fileDataProblem`; a directory, or either breaking the rule, is refused (130).
 */
function checkFileData(fileData: UploadSource['fileData']): FileData {
  if (!fileData) return NO_FILE_DATA;
  if (fileData.directory !== undefined) throw new BdsError(ErrorCode.FILE_SAVE_ERROR, DIRECTORY_REFUSED);
  const checked = (label: 'metadata' | 'tags', value: unknown): FileStrings => {
    if (value === undefined || value === null) return {};
    const problem = fileDataProblem(label, value);
    if (problem) throw new BdsError(ErrorCode.FILE_SAVE_ERROR, problem);
    return Object.fromEntries(Object.entries(value as FileStrings));
  };
  return { metadata: checked('metadata', fileData.metadata), tags: checked('tags', fileData.tags) };
}

export function createFileAdapter(options: ServiceOptions, data: Data): FileAdapter {
  return options.files.adapter === 'database'
    ? new DatabaseFileAdapter(data.blobs)
    : new FsFileAdapter(`${options.dataDir}/files`);
}

/**
 * A name this service stores a file under (`@bds/client/protocol` `isIssuedFileName`): the only
 * names downloads, deletes and imported files may use.
 */
export const isStoredName = isIssuedFileName;

/** The name of an upload, before the service adds its random prefix. */
export function checkFileName(name: string): void {
  if (name.length > MAX_UPLOAD_NAME) throw new BdsError(ErrorCode.INVALID_FILE_NAME, 'Filename too long.');
  if (!isUploadName(name))
    throw new BdsError(ErrorCode.INVALID_FILE_NAME, 'Filename contains invalid characters.');
}

/** A File value that names no file this service stored, and the row field holding it. */
export interface ForeignFileValue {
  className: string;
  objectId: string;
  field: string;
  name: string;
}

/** Uploads, downloads, deletion and the orphan report. Bytes always stream through. */
export class Files {
  constructor(
    private readonly data: Data,
    private readonly adapter: FileAdapter,
    private readonly publicUrl: () => string,
  ) {}

  private get options(): ServiceOptions {
    return this.data.core.options;
  }

  /** The most bytes a file may have (option `maxUploadSize`). */
  get uploadLimit(): number {
    return this.options.maxUploadSize;
  }

  url(name: string): string {
    return `${this.publicUrl()}/files/${encodeURIComponent(this.options.appId)}/${encodeURIComponent(name)}`;
  }

  /** Who may upload (docs/protocol.md#files): fileUpload.enableForPublic, enableForAnonymousUser and
   * enableForAuthenticatedUser. */
  private async checkUploader(ctx: Ctx): Promise<void> {
    const { caller } = ctx;
    if (caller.isMaster) return;
    const settings = this.options.fileUpload;
    if (!caller.user) {
      if (!settings.enableForPublic) throw new BdsError(ErrorCode.FILE_SAVE_ERROR, UPLOAD_REFUSED.public);
      return;
    }
    const [row] = await this.data.lookups.internal('_User', 'objectId', caller.user.objectId, [
      USER_INTERNAL_COLUMNS.anonymousId,
    ]);
    const anonymous = row?.[USER_INTERNAL_COLUMNS.anonymousId] != null;
    if (anonymous && !settings.enableForAnonymousUser) {
      throw new BdsError(ErrorCode.FILE_SAVE_ERROR, UPLOAD_REFUSED.anonymous);
    }
    if (!anonymous && !settings.enableForAuthenticatedUser) {
      throw new BdsError(ErrorCode.FILE_SAVE_ERROR, UPLOAD_REFUSED.authenticated);
    }
  }

  /** POST /files/<name>: the bytes stream to the adapter, at most `maxUploadSize` of them. */
  async upload(ctx: Ctx, name: string, source: UploadSource): Promise<{ name: string; url: string }> {
    await this.checkUploader(ctx);
    checkFileName(name);
    const fileData = checkFileData(source.fileData);
    const limit = this.options.maxUploadSize;
    if (source.size !== undefined && source.size > limit) throw fileTooLarge(limit);
    const stored = `${randomBytes(16).toString('hex')}_${name}`;
    await this.adapter.save(
      stored,
      fileContentType(source.contentType),
      source.bytes,
      limit,
      undefined,
      fileData,
    );
    return { name: stored, url: this.url(stored) };
  }

  /** The stored file of a url's app id and name; names this service never issues never reach the adapter. */
  private stored(appId: string, name: string): Promise<StoredFile | undefined> {
    // Urls, `..`, slashes once decoded: refused here, so no path reaches the filesystem adapter.
    return appId === this.options.appId && isIssuedFileName(name)
      ? this.adapter.info(name)
      : Promise.resolve(undefined);
  }

  /**
   * `GET /files/<appId>/metadata/<name>`, without keys like the file itself (its name is the
   * capability): `{metadata}` of a stored file, `{}` when no stored file has that name, as the
   * incumbent answers. Tags are not in the answer (the incumbent keeps them for its storage only).
   */
  async metadataOf(appId: string, name: string): Promise<{ metadata?: FileStrings }> {
    const file = await this.stored(appId, name);
    return file ? { metadata: file.metadata } : {};
  }

  /**
   * GET or HEAD of a file's url: ETag, ranges, caching, and the protocol's safe serving headers
   * (`storedFileHeaders`: allowlisted images inline, anything else a download, never a page).
   */
  async serve(
    req: IncomingMessage,
    res: ServerResponse,
    appId: string,
    name: string,
    answerHeaders: Readonly<Record<string, string>> = {},
  ): Promise<number> {
    const file = await this.stored(appId, name);
    if (!file) throw fileNotFound();
    const headers: Record<string, string | number> = {
      ...answerHeaders,
      ...storedFileHeaders(file.contentType, name),
      ETag: file.etag,
      'Last-Modified': new Date(file.createdAt).toUTCString(),
      // Stored names are unique and never reused for other bytes.
      'Cache-Control': 'public, max-age=31536000, immutable',
      'Accept-Ranges': 'bytes',
    };
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers).end();
      return 304;
    }
    const range = parseRange(req.headers.range, file.size);
    if (range === 'unsatisfiable') {
      res.writeHead(416, { ...headers, 'Content-Range': `bytes */${file.size}` }).end();
      return 416;
    }
    const [start, end] = range ?? [0, file.size - 1];
    const status = range ? 206 : 200;
    headers['Content-Length'] = Math.max(0, end - start + 1);
    if (range) headers['Content-Range'] = `bytes ${start}-${end}/${file.size}`;
    res.writeHead(status, headers);
    if (req.method === 'HEAD' || file.size === 0) {
      res.end();
      return status;
    }
    // The chunks go straight to the response, one at a time with its back-pressure (no buffering stream between).
    await pipeline(this.adapter.read(file, start, end), res);
    return status;
  }

  /** DELETE /files/<name> (master only); a name no stored file has answers 153. */
  async remove(ctx: Ctx, name: string): Promise<void> {
    demandMaster(ctx.caller, 'fileDelete');
    if (!isIssuedFileName(name) || !(await this.adapter.delete(name))) {
      throw new BdsError(ErrorCode.FILE_DELETE_ERROR, FILE_NOT_DELETED);
    }
  }

  /**
   * Stored files that no row references (master only): a File field, or a File value anywhere
   * inside an Array or Object field, counts as a reference.
   */
  async orphans(ctx: Ctx): Promise<Array<StoredFile & { url: string }>> {
    demandMaster(ctx.caller, 'fileOrphans');
    const referenced = new Set<string>();
    for await (const value of this.fileValues()) referenced.add(value.name);
    const out: Array<StoredFile & { url: string }> = [];
    for await (const file of this.adapter.list()) {
      if (!referenced.has(file.name)) out.push({ ...file, url: this.url(file.name) });
    }
    return out;
  }

  /**
   * File values that name no file this service issued (master only): rows written before the
   * rule, or below it. Nothing serves or fetches them; this lists them so they can be fixed.
   */
  async foreign(ctx: Ctx): Promise<ForeignFileValue[]> {
    demandMaster(ctx.caller, 'fileForeign');
    const out: ForeignFileValue[] = [];
    for await (const value of this.fileValues()) if (!isIssuedFileName(value.name)) out.push(value);
    return out;
  }

  /**
   * Every File value of every row, with where it is: File fields, and File values anywhere inside
   * Array and Object fields. Classes in schema order, rows by objectId, read a page at a time.
   */
  private async *fileValues(): AsyncIterable<ForeignFileValue> {
    const system = ctxOf(MASTER, 'system');
    for (const schema of this.data.core.schemas.all()) {
      const fields = Object.entries(schema.fields)
        .filter(([, def]) => def.type === 'File' || def.type === 'Array' || def.type === 'Object')
        .map(([field]) => field);
      if (fields.length === 0) continue;
      let after = '';
      for (;;) {
        const { results } = await this.data.reads.find(system, schema.className, {
          where: JSON.stringify(after ? { objectId: { $gt: after } } : {}),
          order: 'objectId',
          limit: String(ROW_PAGE),
          keys: fields.join(','),
        });
        for (const row of results as Row[]) {
          for (const field of fields) {
            const names: string[] = [];
            collectFileNames(row[field], names);
            for (const name of new Set(names)) {
              yield { className: schema.className, objectId: String(row.objectId), field, name };
            }
          }
        }
        if (results.length < ROW_PAGE) break;
        after = String(results.at(-1)!.objectId);
      }
    }
  }
}

/** Rows read per page by the file reports. */
const ROW_PAGE = 1000;

/** Adds the name of every File value in `value` (itself, or nested in arrays and objects). */
function collectFileNames(value: unknown, into: string[]): void {
  if (Array.isArray(value)) {
    for (const element of value) collectFileNames(element, into);
  } else if (isObject(value)) {
    if (value.__type === 'File') {
      if (typeof value.name === 'string') into.push(value.name);
      return;
    }
    for (const inner of Object.values(value)) collectFileNames(inner, into);
  }
}

/** A single `bytes=` range; `undefined` serves the whole file (absent, malformed or several ranges). */
export function parseRange(
  header: string | undefined,
  size: number,
): [number, number] | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return undefined;
  }
  if (start >= size) return 'unsatisfiable';
  return [start, end];
}
