import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  call,
  keyEnv,
  killChildren,
  masterHeaders,
  removeTempDirs,
  startCli,
  tempDir,
  waitExit,
} from './helpers/child.ts';

/** Acknowledged writes survive `kill -9` of the service process (SQLite WAL, committed before the answer). */

afterEach(async () => {
  await killChildren();
});
afterAll(() => {
  removeTempDirs();
});

describe('durability', () => {
  it('every acknowledged create, update and delete is there after SIGKILL and a restart', async () => {
    const dataDir = tempDir('bds-durable-');
    const env = { ...keyEnv(), BDS_DATA_DIR: dataDir };
    const child = await startCli(env);
    const headers = masterHeaders();

    // Single creates, 20 at a time.
    const N = 200;
    const created = new Map<string, number>();
    for (let start = 0; start < N; start += 20) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, k) =>
          call(`${child.base}/classes/Ledger`, 'POST', headers, { n: start + k, tag: 'single' }),
        ),
      );
      answers.forEach((a, k) => {
        expect(a.status, a.text).toBe(201);
        created.set(a.json.objectId, start + k);
      });
    }
    // A transactional batch.
    const batch = await call(`${child.base}/batch`, 'POST', headers, {
      transaction: true,
      requests: Array.from({ length: 50 }, (_, i) => ({
        method: 'POST',
        path: '/classes/Ledger',
        body: { n: N + i, tag: 'batch' },
      })),
    });
    expect(batch.status, batch.text).toBe(200);
    (batch.json as Array<{ success: { objectId: string } }>).forEach((r, i) => {
      created.set(r.success.objectId, N + i);
    });
    // An update and a delete, acknowledged.
    const ids = [...created.keys()];
    const updated = ids[0]!;
    const removed = ids[1]!;
    const put = await call(`${child.base}/classes/Ledger/${updated}`, 'PUT', headers, {
      n: { __op: 'Increment', amount: 1000 },
      tag: 'updated',
    });
    expect(put.status, put.text).toBe(200);
    const del = await call(`${child.base}/classes/Ledger/${removed}`, 'DELETE', headers);
    expect(del.status, del.text).toBe(200);

    // kill -9: no shutdown code runs.
    child.proc.kill('SIGKILL');
    const exit = await waitExit(child);
    expect(exit.signal).toBe('SIGKILL');
    expect(child.stdout()).not.toContain('store closed');

    const again = await startCli(env);
    const count = await call(`${again.base}/classes/Ledger?count=1&limit=0`, 'GET', headers);
    expect(count.status, count.text).toBe(200);
    expect(count.json.count).toBe(N + 50 - 1);
    const all = await call(`${again.base}/classes/Ledger?limit=1000&keys=n,tag`, 'GET', headers);
    expect(all.status, all.text).toBe(200);
    const rows = new Map(
      (all.json.results as Array<{ objectId: string; n: number; tag: string }>).map((r) => [r.objectId, r]),
    );
    for (const [id, n] of created) {
      if (id === removed) {
        expect(rows.has(id)).toBe(false);
      } else if (id === updated) {
        expect(rows.get(id)).toMatchObject({ n: n + 1000, tag: 'updated' });
      } else {
        expect(rows.get(id), `row ${id}`).toMatchObject({ n });
      }
    }
    const one = await call(`${again.base}/classes/Ledger/${ids[ids.length - 1]}`, 'GET', headers);
    expect(one.status, one.text).toBe(200);
    expect(one.json.tag).toBe('batch');
    const gone = await call(`${again.base}/classes/Ledger/${removed}`, 'GET', headers);
    expect(gone.status).toBe(404);

    // The schema made by the first run is there too.
    const schema = await call(`${again.base}/schemas/Ledger`, 'GET', headers);
    expect(schema.status, schema.text).toBe(200);
    expect(schema.json.fields).toMatchObject({ n: { type: 'Number' }, tag: { type: 'String' } });
  });
});
