/**
 * Keeps `npm run bench -- --vs-incumbent` honest without timing anything: the service and the
 * incumbent (parse-server on PostgreSQL), seeded by the bench's own code with a few hundred rows,
 * answer every workload's request alike; and the check that guards the run notices when they do not.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_TEST_BASE, postgresAnswers } from '../../server/test/helpers/postgres.ts';

/** Rows of the bench class: enough for every range of the find and count workloads to hold rows. */
const ROWS = 2_000;
/** Rows of the private class. */
const PRIVATE_ROWS = 200;
// Read by bench/common.ts when it is first imported (below), and by the children it starts.
process.env.BENCH_PRIVATE_ROWS = String(PRIVATE_ROWS);
process.env.BENCH_DATABASE_URL = POSTGRES_TEST_BASE;
process.env.BENCH_LOG_LEVEL = 'warn';

const reachable = await postgresAnswers('the incumbent comparison test');

describe.skipIf(!reachable)('npm run bench -- --vs-incumbent: the harness', () => {
  const stops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    (await import('../children.ts')).cleanupSync();
  });

  it('seeds both with the same rows; both answer alike; a difference fails the run', {
    timeout: 60_000,
  }, async () => {
    const { setTempDir } = await import('../children.ts');
    const { removeRowsCreatedSince, startIncumbent, startService, verifySameAnswers } = await import(
      '../vs-incumbent.ts'
    );
    const { BENCH_KEYS, MOUNT_PATH, PRIVATE_CLASS } = await import('../common.ts');
    setTempDir(mkdtempSync(path.join(tmpdir(), 'bds-bench-test-')));

    const [service, incumbent] = await Promise.all([
      startService({ label: 'SQLite', store: 'sqlite', instances: 1 }, ROWS),
      startIncumbent(ROWS, `bds_bench_incumbent_test_${process.pid}`),
    ]);
    stops.push(service.stop, incumbent.stop);
    expect(incumbent.ids).toHaveLength(ROWS);
    expect(incumbent.signedIn.ids).toHaveLength(PRIVATE_ROWS);

    const since = new Date();
    await verifySameAnswers([service, incumbent]);
    // The create workloads made one row in each class on each side; nothing else is newer.
    expect(await removeRowsCreatedSince(service, since)).toBe(2);
    expect(await removeRowsCreatedSince(incumbent, since)).toBe(2);

    // One private row fewer on the incumbent: the signed-in count no longer agrees, and the run stops.
    const res = await fetch(
      `${incumbent.origin}${MOUNT_PATH}/classes/${PRIVATE_CLASS}/${incumbent.signedIn.ids[0]}`,
      {
        method: 'DELETE',
        headers: { 'X-Parse-Application-Id': BENCH_KEYS.appId, 'X-Parse-Master-Key': BENCH_KEYS.masterKey },
      },
    );
    expect(res.status).toBe(200);
    await expect(verifySameAnswers([service, incumbent])).rejects.toThrow(
      `signed-in count (whole class): the answers differ (SQLite: {"status":200,"count":${PRIVATE_ROWS}}; incumbent: {"status":200,"count":${PRIVATE_ROWS - 1}})`,
    );
  });
});
