import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';

export const DEFAULT_WEB_DIST = fileURLToPath(new URL('../../web/dist', import.meta.url));

const PLACEHOLDER = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Console not built</title>
</head>
<body>
<h1>The console UI is not built yet</h1>
<p>The console's backend is running. Build the web UI (<code>npm run build -w web</code>) and restart,
or run the Vite dev server, which proxies <code>/bff/</code> here.</p>
</body>
</html>
`;

const isSpaRequest = (method: string, p: string) =>
  (method === 'GET' || method === 'HEAD') && p !== '/bff' && !p.startsWith('/bff/');

/**
 * The built SPA: hashed assets under /assets/ cached for a year (immutable), index.html never
 * cached, and index.html for every other non-/bff/ GET (client-side routes). Without a build, a
 * static placeholder page.
 */
export function serveSpa(app: Express, webDist = DEFAULT_WEB_DIST): void {
  const index = path.join(webDist, 'index.html');
  if (!existsSync(index)) {
    app.use((req, res, next) => {
      if (!isSpaRequest(req.method, req.path)) return next();
      res.setHeader('Cache-Control', 'no-cache');
      res.type('html').send(PLACEHOLDER);
    });
    return;
  }
  app.use(
    '/assets',
    express.static(path.join(webDist, 'assets'), {
      immutable: true,
      maxAge: '365d',
      index: false,
      fallthrough: false,
    }),
  );
  app.use(
    express.static(webDist, {
      index: false,
      setHeaders: (res) => res.setHeader('Cache-Control', 'no-cache'),
    }),
  );
  app.use((req, res, next) => {
    if (!isSpaRequest(req.method, req.path)) return next();
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  });
}
