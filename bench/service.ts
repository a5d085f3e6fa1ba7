/**
 * Child process: the service under test. Starts it on a loopback port with a fresh data dir,
 * creates the bench class through the API (master key), seeds rows through the store in
 * transactions of 10,000 (same insert path as POST /classes), then reports its url and the seeded ids.
 */
import { rmSync } from 'node:fs';
import { initialValues, parseWriteBody } from '../server/src/data/write-body.ts';
import { createService } from '../server/src/index.ts';
import { newObjectId } from '../server/src/util/ids.ts';
import { BENCH_CLASS, BENCH_KEYS, exitWithParent, MOUNT_PATH, N_RANGE, send } from './common.ts';

const TAGS = ['red', 'green', 'blue', 'cyan', 'magenta', 'yellow', 'black', 'white'];

async function main(): Promise<void> {
  const dataDir = process.env.BENCH_DATA_DIR;
  const rows = Number(process.env.BENCH_ROWS ?? 100_000);
  if (!dataDir) throw new Error('BENCH_DATA_DIR is required');

  const service = await createService({
    ...BENCH_KEYS,
    dataDir,
    port: 0,
    host: '127.0.0.1',
    mountPath: MOUNT_PATH,
    shutdownGraceMs: 1_000,
  });
  exitWithParent(async (orphaned) => {
    await service.close();
    // The driver normally removes its temp dir; if it was killed, this child cleans up instead.
    const tempDir = process.env.BENCH_TEMP_DIR;
    if (orphaned && tempDir) rmSync(tempDir, { recursive: true, force: true });
  });
  const { url } = await service.listen(0, '127.0.0.1');

  const res = await fetch(`${url}/schemas/${BENCH_CLASS}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Backend-Application-Id': BENCH_KEYS.appId,
      'X-Backend-Master-Key': BENCH_KEYS.masterKey,
    },
    body: JSON.stringify({
      className: BENCH_CLASS,
      fields: {
        n: { type: 'Number' },
        n2: { type: 'Number' },
        name: { type: 'String' },
        tags: { type: 'Array' },
      },
      indexes: { n_1: { n: 1 } },
    }),
  });
  if (res.status !== 200)
    throw new Error(`POST /schemas/${BENCH_CLASS} answered ${res.status}: ${await res.text()}`);

  const { store, schemas } = service.core;
  const schema = schemas.get(BENCH_CLASS)!;
  const ids: string[] = new Array(rows);
  const started = performance.now();
  const chunk = 10_000;
  for (let from = 0; from < rows; from += chunk) {
    await store.transaction(async () => {
      for (let i = from; i < Math.min(rows, from + chunk); i++) {
        // The same steps as Records.create: parse the body, reduce it to values, insert.
        const body = {
          n: Math.floor(Math.random() * N_RANGE),
          name: `item ${i}`,
          tags: [TAGS[i % TAGS.length], TAGS[(i * 7) % TAGS.length]],
        };
        const parsed = parseWriteBody(body, 'create', schema.fields);
        const { values } = initialValues(parsed, schema.fields);
        const objectId = newObjectId();
        await store.insert(schema, {
          objectId,
          createdAt: new Date().toISOString(),
          values,
          acl: parsed.acl ?? null,
          relations: parsed.relations,
        });
        ids[i] = objectId;
      }
    });
  }
  const seedMs = performance.now() - started;
  send({ type: 'ready', url, seedMs, ids });
}

main().catch((err) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
