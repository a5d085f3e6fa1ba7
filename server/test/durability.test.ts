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

  it('under a mixed write load killed mid-flight: every acknowledged write is there, no batch half-applied', async () => {
    const dataDir = tempDir('bds-durable-load-');
    const env = { ...keyEnv(), BDS_DATA_DIR: dataDir };
    const child = await startCli(env);
    const headers = masterHeaders();
    const base = child.base;
    const counter = (await call(`${base}/classes/Counter`, 'POST', headers, { n: 0 })).json
      .objectId as string;
    const owner = (await call(`${base}/classes/Owner`, 'POST', headers, { name: 'o' })).json
      .objectId as string;
    const MEMBERS = 3000;
    for (let from = 0; from < MEMBERS; from += 100) {
      const made = await call(`${base}/batch`, 'POST', headers, {
        requests: Array.from({ length: 100 }, (_, k) => ({
          method: 'POST',
          path: '/classes/Member',
          body: { objectId: `m${from + k}` },
        })),
      });
      expect(made.status, made.text).toBe(200);
    }
    let nextMember = 0;
    const member = (i: number) => ({ __type: 'Pointer', className: 'Member', objectId: `m${i}` });

    const ackedCreates = new Set<string>();
    let ackedIncrements = 0;
    let sentIncrements = 0;
    const ackedMembers = new Set<string>();
    const batches = new Map<string, boolean>(); // tag -> acknowledged
    const BATCH = 5;
    let stop = false;
    let seq = 0;
    const worker = async (kind: number) => {
      while (!stop) {
        const i = seq++;
        try {
          if (kind === 0) {
            const res = await call(`${base}/classes/Entry`, 'POST', headers, { i, tag: `c${i}` });
            if (res.status === 201) ackedCreates.add(res.json.objectId);
          } else if (kind === 1) {
            sentIncrements++;
            const res = await call(`${base}/classes/Counter/${counter}`, 'PUT', headers, {
              n: { __op: 'Increment', amount: 1 },
            });
            if (res.status === 200) ackedIncrements++;
          } else if (kind === 2) {
            const m = nextMember++ % MEMBERS;
            const res = await call(`${base}/classes/Owner/${owner}`, 'PUT', headers, {
              members: { __op: 'AddRelation', objects: [member(m)] },
            });
            if (res.status === 200) ackedMembers.add(`m${m}`);
          } else {
            const tag = `b${i}`;
            batches.set(tag, false);
            const res = await call(`${base}/batch`, 'POST', headers, {
              transaction: true,
              requests: Array.from({ length: BATCH }, (_, k) => ({
                method: 'POST',
                path: '/classes/Batched',
                body: { tag, k },
              })),
            });
            if (res.status === 200) batches.set(tag, true);
          }
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const load = [0, 0, 1, 1, 2, 3, 3].map((kind) => worker(kind));
    // Let the load run, then kill -9 while requests are in flight.
    while (
      ackedCreates.size < 100 ||
      ackedIncrements < 50 ||
      ackedMembers.size < 20 ||
      [...batches.values()].filter(Boolean).length < 10
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    child.proc.kill('SIGKILL');
    stop = true;
    await Promise.all(load);
    await waitExit(child);

    const again = await startCli(env);
    const all = async (className: string, keys: string) =>
      (await call(`${again.base}/classes/${className}?limit=1000000&keys=${keys}`, 'GET', headers)).json
        .results as Array<Record<string, unknown>>;
    const entries = new Set((await all('Entry', 'i')).map((r) => r.objectId));
    for (const id of ackedCreates) expect(entries.has(id), `create ${id}`).toBe(true);
    const n = (await call(`${again.base}/classes/Counter/${counter}`, 'GET', headers)).json.n as number;
    expect(n).toBeGreaterThanOrEqual(ackedIncrements);
    expect(n).toBeLessThanOrEqual(sentIncrements);
    const related = await call(
      `${again.base}/classes/Member?limit=100000&where=${encodeURIComponent(JSON.stringify({ $relatedTo: { object: { __type: 'Pointer', className: 'Owner', objectId: owner }, key: 'members' } }))}`,
      'GET',
      headers,
    );
    expect(related.status, related.text).toBe(200);
    const held = new Set((related.json.results as Array<{ objectId: string }>).map((r) => r.objectId));
    for (const m of ackedMembers) expect(held.has(m), `relation add ${m}`).toBe(true);
    const byTag = new Map<string, number>();
    for (const r of await all('Batched', 'tag'))
      byTag.set(r.tag as string, (byTag.get(r.tag as string) ?? 0) + 1);
    for (const [tag, acked] of batches) {
      const count = byTag.get(tag) ?? 0;
      expect([0, BATCH], `batch ${tag}`).toContain(count);
      if (acked) expect(count, `acknowledged batch ${tag}`).toBe(BATCH);
    }
    expect(ackedMembers.size).toBeGreaterThan(0);
  }, 90_000);
});
