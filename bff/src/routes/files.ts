import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type express from 'express';
import type { BffContext } from '../context.ts';
import { appRoute, BffError, Code, param, unwrap } from './http.ts';

/** The header the console sends a file's own type in (its Content-Type stays octet-stream, so no body parser touches it). */
export const UPLOAD_TYPE_HEADER = 'x-upload-content-type';
const FORWARDED = [
  'content-type',
  'content-length',
  'etag',
  'x-content-type-options',
  'content-disposition',
  'content-security-policy',
];

/**
 * Files: uploads stream through to the service (never buffered here), downloads stream back for
 * previews (same origin, so the page's CSP allows the images), the orphan report and deletion.
 */
export function registerFileRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/files';

  router.get(
    `${base}/orphans`,
    appRoute(ctx, {}, async (s) =>
      unwrap(await s.client.request('GET', '/files/orphans', { useMasterKey: true })),
    ),
  );

  router.post(
    `${base}/:name`,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      if (s.req.readableEnded || (s.req as { _body?: boolean })._body) {
        throw new BffError(
          400,
          Code.INVALID_JSON,
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
      const file = await s.client.downloadFile(param(s.req, 'name'));
      if (!file.success) unwrap(file);
      else {
        for (const h of FORWARDED) {
          const v = file.data.headers.get(h);
          if (v) s.res.setHeader(h, v);
        }
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
