import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ErrorCode, foreignFileNameText, isIssuedFileName, storedFileHeaders } from '@bds/client/protocol';
import type express from 'express';
import type { BffContext } from '../context.ts';
import { appRoute, BffError, param, unwrap } from './http.ts';

/** The header the console sends a file's own type in (its Content-Type stays octet-stream, so no body parser touches it). */
export const UPLOAD_TYPE_HEADER = 'x-upload-content-type';

/**
 * Files: uploads stream through to the service (never buffered here), downloads of stored files
 * stream back for previews (same origin, so the page's CSP allows the images), the orphan report,
 * the report of File values naming no stored file, and deletion. A download is only ever of a
 * name the service issued, fetched from the service: never a url taken from data.
 */
export function registerFileRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/files';

  router.get(
    `${base}/orphans`,
    appRoute(ctx, {}, async (s) =>
      unwrap(await s.client.request('GET', '/files/orphans', { useMasterKey: true })),
    ),
  );

  router.get(
    `${base}/foreign`,
    appRoute(ctx, {}, async (s) =>
      unwrap(await s.client.request('GET', '/files/foreign', { useMasterKey: true })),
    ),
  );

  router.post(
    `${base}/:name`,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      if (s.req.readableEnded || (s.req as { _body?: boolean })._body) {
        throw new BffError(
          400,
          ErrorCode.INVALID_JSON,
          'Send the file as application/octet-stream with X-Upload-Content-Type.',
        );
      }
      const type = String(s.req.headers[UPLOAD_TYPE_HEADER] ?? 'application/octet-stream');
      const created = unwrap(
        await s.client.uploadFile(param(s.req, 'name'), s.req, { contentType: type, useMasterKey: true }),
      );
      s.audit('file.upload', created.name, null, created);
      return created;
    }),
  );

  router.get(
    `${base}/:name`,
    appRoute(ctx, {}, async (s) => {
      const name = param(s.req, 'name');
      if (!isIssuedFileName(name)) {
        throw new BffError(400, ErrorCode.INVALID_FILE_NAME, foreignFileNameText(name));
      }
      const file = await s.client.downloadFile(name);
      if (!file.success) unwrap(file);
      else {
        // The protocol's safe serving headers, worked out here: nothing of the answer is forwarded but its type.
        for (const [header, value] of Object.entries(storedFileHeaders(file.data.contentType, name))) {
          s.res.setHeader(header, value);
        }
        if (Number.isSafeInteger(file.data.size)) s.res.setHeader('Content-Length', file.data.size);
        s.res.setHeader('Cache-Control', 'private, max-age=300');
        s.res.status(200);
        await pipeline(Readable.fromWeb(file.data.body as never), s.res);
      }
      return undefined;
    }),
  );

  router.delete(
    `${base}/:name`,
    appRoute(ctx, { write: true }, async (s) => {
      const name = param(s.req, 'name');
      unwrap(await s.client.deleteFile(name));
      s.audit('file.delete', name, { name }, null);
      return {};
    }),
  );
}
