import type { Files } from '../../files/service.ts';
import type { AppState } from '../app.ts';
import type { Router } from '../router.ts';

const UPLOAD = /^\/files\/([^/]+)$/;
const DOWNLOAD = /^\/files\/([^/]+)\/([^/]+)$/;

function segment(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Files: `POST /files/<name>` streams its body (routed before the body is read, with the same
 * credential checks), `GET`/`HEAD /files/<appId>/<name>` serves the bytes without keys (the url is
 * the capability), `DELETE /files/<name>`, `GET /files/orphans` and `GET /files/foreign` (File
 * values that name no stored file) are master only.
 */
export function registerFileRoutes(router: Router, state: AppState, files: Files): void {
  state.streamed = (method, path) => {
    const m = method === 'POST' ? UPLOAD.exec(path) : null;
    if (!m) return undefined;
    return async (req, res, ctx) => {
      const name = segment(m[1]!) ?? '';
      const created = await files.upload(ctx, name, req);
      const body = JSON.stringify(created);
      res.writeHead(201, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'Access-Control-Allow-Origin': '*',
        Location: created.url,
      });
      res.end(body);
      return 201;
    };
  };
  state.open = (req, res, path) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
    const m = DOWNLOAD.exec(path);
    if (!m) return undefined;
    return files.serve(req, res, segment(m[1]!) ?? '', segment(m[2]!) ?? '');
  };
  router.add('GET', '/files/orphans', async (req) => ({ body: { results: await files.orphans(req.ctx) } }));
  router.add('GET', '/files/foreign', async (req) => ({ body: { results: await files.foreign(req.ctx) } }));
  router.add('DELETE', '/files/:name', async (req) => {
    await files.remove(req.ctx, req.params.name!);
    return { body: {} };
  });
}
