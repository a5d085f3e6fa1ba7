import type { IncomingMessage } from 'node:http';
import { isObject, SDK_UPLOAD_HEADERS } from '@bds/client/protocol';
import { fileTooLarge } from '../../files/adapter.ts';
import type { Files, UploadSource } from '../../files/service.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import type { AppState } from '../app.ts';
import { CORS_ANSWER_HEADERS } from '../cors.ts';
import type { ApiResponse, Router } from '../router.ts';

const UPLOAD = /^\/files\/([^/]+)$/;
const DOWNLOAD = /^\/files\/([^/]+)\/([^/]+)$/;
/** Standard base64, padded or not (the SDKs send it padded). */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** What a JSON form may hold besides the base64 of a file of the limit: credentials, the file's type. */
const JSON_FORM_ENVELOPE = 64 * 1024;

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

/** A header the SDKs send to describe a file: its JSON value, or the text when it is not JSON. */
function described(req: IncomingMessage, name: string, json: boolean): unknown {
  const value = req.headers[name.toLowerCase()];
  const text = Array.isArray(value) ? value.join(',') : value;
  if (text === undefined || !json) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The raw form: the request's body is the file, its headers say what it is. */
function rawUpload(req: IncomingMessage): UploadSource {
  const declared = Number(req.headers['content-length']);
  return {
    bytes: req,
    contentType: req.headers['content-type'],
    size: Number.isFinite(declared) ? declared : undefined,
    fileData: {
      metadata: described(req, SDK_UPLOAD_HEADERS.metadata, true),
      tags: described(req, SDK_UPLOAD_HEADERS.tags, true),
      directory: described(req, SDK_UPLOAD_HEADERS.directory, false),
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
  if (typeof base64 !== 'string' || base64.length % 4 === 1 || !BASE64.test(base64)) {
    throw invalidUpload("base64 must hold the file's bytes in base64");
  }
  if (fileData !== undefined && !isObject(fileData)) throw invalidUpload('fileData must be a JSON object');
  const bytes = Buffer.from(base64, 'base64');
  return { bytes: once(bytes), contentType, size: bytes.length, fileData };
}

const created = (file: { name: string; url: string }): ApiResponse => ({
  status: 201,
  body: file,
  headers: { Location: file.url },
});

/**
 * Files: `POST /files/<name>` takes the file as the raw body (streamed, routed before the body is
 * read, with the same credential checks) or in the SDKs' JSON form (base64, credentials in the
 * body); `GET`/`HEAD /files/<appId>/<name>` serves the bytes without keys (the url is the
 * capability); `DELETE /files/<name>`, `GET /files/orphans` and `GET /files/foreign` (File values
 * that name no stored file) are master only.
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
