/**
 * Child process: the baseline. A bare node:http server doing the same primary-key lookup as
 * GET /classes/BenchItem/<id>, with a read-only better-sqlite3 connection on the service's file.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { BENCH_CLASS, exitWithParent, send, startProfiler } from './common.ts';

async function main(): Promise<void> {
  const file = process.env.BENCH_DB_FILE;
  if (!file) throw new Error('BENCH_DB_FILE is required');
  const db = new Database(file, { readonly: true });
  const byId = db.prepare(`SELECT * FROM "${BENCH_CLASS}" WHERE objectId = ?`);

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const id = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
    const row = byId.get(id);
    const text = row ? JSON.stringify(row) : '{"code":101,"error":"Object not found."}';
    res.writeHead(row ? 200 : 404, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
    });
    res.end(text);
  });
  server.keepAliveTimeout = 65_000;
  const profiler = process.env.BENCH_PROFILE_DIR
    ? await startProfiler(process.env.BENCH_PROFILE_DIR, 'baseline')
    : undefined;
  exitWithParent(async () => {
    await profiler?.stop();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      db.close();
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    send({ type: 'ready', url: `http://127.0.0.1:${port}` });
  });
}

main().catch((err) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
