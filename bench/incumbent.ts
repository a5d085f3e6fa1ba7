/**
 * Child process: the incumbent (`parse-server`, a root devDependency) on PostgreSQL, for
 * `npm run bench -- --vs-incumbent` (bench/vs-incumbent.ts). It runs with its own defaults, the
 * bench's app id and keys, under the same mount path as the service, on the database
 * BENCH_INCUMBENT_DATABASE_URI (fresh, made and dropped by the driver). It is seeded through its own
 * REST API with the rows the service is seeded with (bench/common.ts: the same values, ACLs, role,
 * reader and number of owners, and the same declared index), then reports its url and the ids.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import {
  BENCH_CLASS,
  BENCH_KEYS,
  benchItemRows,
  exitWithParent,
  MOUNT_PATH,
  OWNERS,
  PRIVATE_CLASS,
  privateItemRows,
  READER,
  SIGNED_IN_IDS,
  send,
} from './common.ts';
import { requireAsIncumbent, restoreLayerParams } from './incumbent-router.ts';

async function main(): Promise<void> {
  const databaseURI = process.env.BENCH_INCUMBENT_DATABASE_URI;
  const tempDir = process.env.BENCH_TEMP_DIR;
  const rows = Number(process.env.BENCH_ROWS ?? 20_000);
  if (!databaseURI || !tempDir)
    throw new Error('BENCH_INCUMBENT_DATABASE_URI and BENCH_TEMP_DIR are required');

  // Its log files go to the run's temp dir, not into the working tree; read when it is loaded.
  const logsFolder = path.join(tempDir, 'incumbent-logs');
  process.env.PARSE_SERVER_LOGS_FOLDER = logsFolder;
  restoreLayerParams();
  const { ParseServer } = requireAsIncumbent('parse-server');
  const express = requireAsIncumbent('express');
  const app = express();
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}${MOUNT_PATH}`;

  const api = new ParseServer({
    databaseURI,
    appId: BENCH_KEYS.appId,
    masterKey: BENCH_KEYS.masterKey,
    restAPIKey: BENCH_KEYS.restAPIKey,
    serverURL: url,
    logsFolder,
  });
  exitWithParent(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await api.handleShutdown();
  });
  await api.start();
  app.use(MOUNT_PATH, api.app);

  const started = performance.now();
  const { ids, signedIn } = await seed(url, rows);
  send({ type: 'ready', url, seedMs: performance.now() - started, ids, signedIn });
}

/** Sub-requests per /batch (the client library's segment size), and batches in flight. */
const BATCH = 50;
const PARALLEL_BATCHES = 4;

async function seed(url: string, rows: number) {
  const call = async (method: string, route: string, body: unknown, master = true) => {
    const res = await fetch(`${url}${route}`, {
      method,
      headers: {
        'Content-Type': 'application/json',
        'X-Parse-Application-Id': BENCH_KEYS.appId,
        'X-Parse-REST-API-Key': BENCH_KEYS.restAPIKey,
        ...(master ? { 'X-Parse-Master-Key': BENCH_KEYS.masterKey } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300)
      throw new Error(`${method} ${route} answered ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  /** Creates every body in `route` through /batch, in order; answers their objectIds in that order. */
  const createAll = async (route: string, bodies: Iterable<unknown>): Promise<string[]> => {
    const chunks: unknown[][] = [];
    for (const body of bodies) {
      if (chunks.length === 0 || chunks.at(-1)!.length === BATCH) chunks.push([]);
      chunks.at(-1)!.push(body);
    }
    const ids: string[][] = new Array(chunks.length);
    let next = 0;
    const worker = async () => {
      while (next < chunks.length) {
        const i = next++;
        const requests = chunks[i]!.map((body) => ({ method: 'POST', path: `${MOUNT_PATH}${route}`, body }));
        const answers: Array<{ success?: { objectId: string }; error?: unknown }> = await call(
          'POST',
          '/batch',
          { requests },
        );
        ids[i] = answers.map((a) => {
          if (!a.success) throw new Error(`a seeding batch to ${route} failed: ${JSON.stringify(a.error)}`);
          return a.success.objectId;
        });
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_BATCHES }, worker));
    return ids.flat();
  };

  // The service's bench class, with the same declared index; the private class has none (not on score).
  await call('POST', `/schemas/${BENCH_CLASS}`, {
    className: BENCH_CLASS,
    fields: {
      n: { type: 'Number' },
      n2: { type: 'Number' },
      name: { type: 'String' },
      tags: { type: 'Array' },
    },
    indexes: { n_1: { n: 1 } },
  });
  const ids = await createAll(`/classes/${BENCH_CLASS}`, benchItemRows(rows));

  const reader = await call('POST', '/users', READER, false);
  // Owners hold no password (as the service's): users made by the anonymous provider.
  const owners = await createAll(
    '/users',
    Array.from({ length: OWNERS }, () => ({ authData: { anonymous: { id: randomUUID() } } })),
  );
  await call('POST', '/roles', {
    name: 'Readers',
    ACL: { '*': { read: true } },
    users: {
      __op: 'AddRelation',
      objects: [{ __type: 'Pointer', className: '_User', objectId: reader.objectId }],
    },
  });
  await call('POST', `/schemas/${PRIVATE_CLASS}`, {
    className: PRIVATE_CLASS,
    fields: { score: { type: 'Number' }, label: { type: 'String' } },
  });
  const privateIds = await createAll(`/classes/${PRIVATE_CLASS}`, privateItemRows(owners));
  return {
    ids,
    signedIn: { sessionToken: reader.sessionToken as string, ids: privateIds.slice(0, SIGNED_IN_IDS) },
  };
}

main().catch((err) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
