import type { IncomingMessage, ServerResponse } from 'node:http';
import { BASE64_PATTERN, FILE_DATA_LIMITS, isObject, SDK_UPLOAD_HEADERS } from '@bds/client/protocol';
import { fileTooLarge } from '../../files/adapter.ts';
import type { Files, UploadSource } from '../../files/service.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { AppState } from '../app.ts';
import { CORS_ANSWER_HEADERS } from '../cors.ts';
import type { ApiResponse, Router } from '../router.ts';

const UPLOAD = /^\/files\/([^/]+)$/;
const DOWNLOAD = /^\/files\/([^/]+)\/([^/]+)$/;
/** The incumbent's route for a file's metadata (no stored name is `metadata`: they start with 32 hex digits). */
const METADATA = /^\/files\/([^/]+)\/metadata\/([^/]+)$/;
/** The JSON text of metadata and tags at their limits (values without escapes): quotes, colon, comma and braces. */
const FILE_DATA_JSON =
  2 * (2 + FILE_DATA_LIMITS.keys * (FILE_DATA_LIMITS.keyBytes + FILE_DATA_LIMITS.valueBytes + 6));
/**
 * What a JSON form may hold besides the base64 of a file of the limit: credentials and the file's
 * type, its metadata and tags.
 */
const JSON_FORM_ENVELOPE = 32 * 1024 + FILE_DATA_JSON;
/** The fields of the JSON form's `fileData`. */
const FILE_DATA_FIELDS = new Set(['metadata', 'tags', 'directory']);

function segment(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

const invalidUpload = (why: string) => new BdsError(ErrorCode.INVALID_JSON, `Invalid file upload: ${why}.`);

async function* once(bytes: Buffer): AsyncIterable<Uint8Array> {
  if (bytes.length > 0) yield bytes;
}

/** A header's text as sent; an empty one counts as absent (as the incumbent reads it). */
function headerText(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  const text = Array.isArray(value) ? value.join(',') : value;
  return text === '' ? undefined : text;
}

/** A header the SDKs send a JSON object in (metadata, tags): anything else answers the incumbent's 107. */
function headerObject(req: IncomingMessage, name: string): unknown {
  const text = headerText(req, name);
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (!isObject(value)) throw new BdsError(ErrorCode.INVALID_JSON, `Invalid JSON in ${name} header.`);
  return value;
}

/** The raw form: the request's body is the file, its headers say what it is. */
function rawUpload(req: IncomingMessage): UploadSource {
  const declared = Number(req.headers['content-length']);
  return {
    bytes: req,
    contentType: req.headers['content-type'],
    size: Number.isFinite(declared) ? declared : undefined,
    fileData: {
      metadata: headerObject(req, SDK_UPLOAD_HEADERS.metadata),
      tags: headerObject(req, SDK_UPLOAD_HEADERS.tags),
      directory: headerText(req, SDK_UPLOAD_HEADERS.directory),
    },
  };
}

/**
 * The JSON form the SDKs send (a `text/plain` body, so a browser needs no preflight):
 * `{base64, fileData?}` once app.ts lifted its credentials and `_ContentType`.
 */
function jsonUpload(body: unknown, contentType: string | undefined): UploadSource {
  if (!isObject(body)) throw invalidUpload('the body must be a JSON object');
  const { base64, fileData, ...rest } = body;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) {
    throw invalidUpload(`unknown field ${unknown} (the JSON form has base64 and fileData)`);
  }
  if (typeof base64 !== 'string' || base64.length % 4 === 1 || !BASE64_PATTERN.test(base64)) {
    throw invalidUpload("base64 must hold the file's bytes in base64");
  }
  if (fileData !== undefined && !isObject(fileData)) throw invalidUpload('fileData must be a JSON object');
  const unknownData = Object.keys(fileData ?? {}).find((key) => !FILE_DATA_FIELDS.has(key));
  if (unknownData !== undefined) {
    throw invalidUpload(`unknown field fileData.${unknownData} (fileData has metadata, tags and directory)`);
  }
  const bytes = Buffer.from(base64, 'base64');
  return { bytes: once(bytes), contentType, size: bytes.length, fileData };
}

/**
 * A JSON answer written here (without its body for a HEAD): the metadata route is served, like
 * downloads, before any key is read.
 */
async function sendJson(req: IncomingMessage, res: ServerResponse, body: Promise<unknown>): Promise<number> {
  const text = JSON.stringify(await body);
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...CORS_ANSWER_HEADERS,
  });
  res.end(req.method === 'HEAD' ? undefined : text);
  return 200;
}

const created = (file: { name: string; url: string }): ApiResponse => ({
  status: 201,
  body: file,
  headers: { Location: file.url },
});

/**
 * Files: `POST /files/<name>` takes the file as the raw body (streamed, routed before the body is
 * read, with the same credential checks) or in the SDKs' JSON form (base64, credentials in the
 * body); `GET`/`HEAD /files/<appId>/<name>` serves the bytes and `/files/<appId>/metadata/<name>`
 * the metadata, both without keys (the url is the capability); `DELETE /files/<name>`,
 * `GET /files/orphans` and `GET /files/foreign` (File values that name no stored file) are master only.
 */
export function registerFileRoutes(router: Router, state: AppState, files: Files): void {
  const limit = files.uploadLimit;
  // base64 takes 4 characters for every 3 bytes: the body may be that large, the file may not.
  const jsonLimit = Math.ceil(limit / 3) * 4 + JSON_FORM_ENVELOPE;
  state.uploads = (method, path) => {
    const m = method === 'POST' ? UPLOAD.exec(path) : null;
    if (!m) return undefined;
    const name = segment(m[1]!) ?? '';
    return {
      raw: async (req, ctx) => created(await files.upload(ctx, name, rawUpload(req))),
      json: async (body, contentType, ctx) =>
        created(await files.upload(ctx, name, jsonUpload(body, contentType))),
      jsonLimit,
      tooLarge: () => fileTooLarge(limit),
    };
  };
  state.open = (req, res, path) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
    const metadata = METADATA.exec(path);
    if (metadata) {
      return sendJson(req, res, files.metadataOf(segment(metadata[1]!) ?? '', segment(metadata[2]!) ?? ''));
    }
    const m = DOWNLOAD.exec(path);
    if (!m) return undefined;
    return files.serve(req, res, segment(m[1]!) ?? '', segment(m[2]!) ?? '', CORS_ANSWER_HEADERS);
  };
  router.add('GET', '/files/orphans', async (req) => ({ body: { results: await files.orphans(req.ctx) } }));
  router.add('GET', '/files/foreign', async (req) => ({ body: { results: await files.foreign(req.ctx) } }));
  router.add('DELETE', '/files/:name', async (req) => {
    await files.remove(req.ctx, req.params.name!);
    return { body: {} };
  });
}
