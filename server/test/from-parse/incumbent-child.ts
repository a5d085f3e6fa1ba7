/**
 * Child process of the import tests: the incumbent (`parse-server`, a root devDependency) on the
 * PostgreSQL database INCUMBENT_DATABASE_URI, with the keys in INCUMBENT_KEYS, on a free port. It
 * keeps its files on disk in INCUMBENT_TEMP_DIR, reports `{ url }` to its parent and stops when the parent goes away. The router work-around
 * (bench/incumbent-router.ts) applies in this process only.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { requireAsIncumbent, restoreLayerParams } from '../../../bench/incumbent-router.ts';

const ANY_PAYLOAD = { validateAuthData: () => Promise.resolve(), validateAppId: () => Promise.resolve() };

async function main(): Promise<void> {
  const databaseURI = process.env.INCUMBENT_DATABASE_URI!;
  const keys = JSON.parse(process.env.INCUMBENT_KEYS!) as Record<string, string>;
  const logsFolder = path.join(process.env.INCUMBENT_TEMP_DIR!, 'logs');
  process.env.PARSE_SERVER_LOGS_FOLDER = logsFolder;
  restoreLayerParams();
  const { ParseServer } = requireAsIncumbent('parse-server');
  // Its files on disk (no MongoDB for GridFS): the adapter writes under ./files, so in the temp dir.
  const FilesAdapter = requireAsIncumbent('@parse/fs-files-adapter');
  process.chdir(process.env.INCUMBENT_TEMP_DIR!);
  const express = requireAsIncumbent('express');
  const app = express();
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}/parse`;
  const api = new ParseServer({
    databaseURI,
    ...keys,
    serverURL: url,
    logsFolder,
    silent: true,
    filesAdapter: new FilesAdapter(),
    // Two sign-in providers that take any payload, so tests can sign users up with their authData.
    auth: { acme: ANY_PAYLOAD, legacy: ANY_PAYLOAD },
  });
  await api.start();
  app.use('/parse', api.app);
  const stop = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await api.handleShutdown().catch(() => undefined);
    process.exit(0);
  };
  process.on('disconnect', () => void stop());
  process.on('SIGTERM', () => void stop());
  process.send?.({ url });
}

main().catch((err) => {
  process.send?.({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
