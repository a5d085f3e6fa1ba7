/**
 * `npm run bench -- vector-search`: exact top-10 vector search on the embedded store.
 *
 * Seeds BENCH_VECTORS rows (default 100,000) with a `Vector` field of BENCH_DIM numbers (default
 * 384) through the write pipeline, then runs BENCH_QUERIES searches (default 50) through the
 * aggregation (`$vectorSearch`, cosine) and reports the latency p50/p99 and the recall against a
 * brute-force reference computed here from the same float32 vectors (exact search: must be 1.0).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createService } from '../server/src/index.ts';
import { MASTER } from '../server/src/kernel/caller.ts';
import { ctxOf } from '../server/src/kernel/context.ts';
import { BENCH_KEYS } from './common.ts';

const N = Number(process.env.BENCH_VECTORS ?? 100_000);
const DIM = Number(process.env.BENCH_DIM ?? 384);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 50);
const K = 10;

/** xorshift32: the same vectors on every run. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) / 4294967296) * 2 - 1;
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-bench-vector-'));
try {
  const service = await createService({ ...BENCH_KEYS, dataDir, logLevel: 'warn' });
  const ctx = ctxOf(MASTER, 'system');
  await service.data.writes.createClass(ctx, 'Embedding', {
    fields: { vector: { type: 'Vector', dimension: DIM }, n: { type: 'Number' } },
  });
  const next = random(42);
  const stored = new Float32Array(N * DIM);
  const ids: string[] = [];
  console.log(`bench: seeding ${N} vectors of ${DIM} dimensions through the write pipeline...`);
  const seedStart = performance.now();
  for (let start = 0; start < N; start += 1000) {
    await service.core.store.transaction(async () => {
      for (let i = start; i < Math.min(N, start + 1000); i++) {
        const v = Array.from({ length: DIM }, next);
        stored.set(v, i * DIM);
        const created = await service.data.writes.create(ctx, 'Embedding', { vector: v, n: i });
        ids[i] = created.objectId;
      }
    });
  }
  console.log(`bench: seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  // The first search loads the field's in-memory index from the store; reported on its own.
  const loadStart = performance.now();
  await service.data.aggregate.run(ctx, 'Embedding', [
    { $vectorSearch: { queryVector: Array.from({ length: DIM }, () => 1), path: 'vector', limit: K } },
  ]);
  const loadMs = performance.now() - loadStart;
  const latencies: number[] = [];
  let found = 0;
  const queryRandom = random(7);
  for (let q = 0; q < QUERIES; q++) {
    const query = Float32Array.from({ length: DIM }, queryRandom);
    const started = performance.now();
    const results = await service.data.aggregate.run(ctx, 'Embedding', [
      { $vectorSearch: { queryVector: Array.from(query), path: 'vector', limit: K } },
      { $project: { n: 1 } },
    ]);
    latencies.push(performance.now() - started);
    // Brute force over the same float32 numbers.
    let qn = 0;
    for (let d = 0; d < DIM; d++) qn += query[d]! * query[d]!;
    const scores: Array<[number, number]> = [];
    for (let i = 0; i < N; i++) {
      let dot = 0;
      let sq = 0;
      for (let d = 0; d < DIM; d++) {
        const x = stored[i * DIM + d]!;
        dot += x * query[d]!;
        sq += x * x;
      }
      scores.push([dot / (Math.sqrt(sq) * Math.sqrt(qn)), i]);
    }
    scores.sort((a, b) => b[0] - a[0] || (ids[a[1]]! < ids[b[1]]! ? -1 : 1));
    const reference = new Set(scores.slice(0, K).map(([, i]) => i));
    found += results.filter((r) => reference.has(r.n as number)).length;
  }
  const recall = found / (QUERIES * K);
  console.log('');
  console.log(`vector-search: ${N} vectors x ${DIM} dims, exact top-${K} (cosine), ${QUERIES} queries`);
  console.log(`  first search (loads the index): ${loadMs.toFixed(0)} ms`);
  console.log(
    `  p50 ${pct(latencies, 50).toFixed(1)} ms   p99 ${pct(latencies, 99).toFixed(1)} ms   recall ${recall.toFixed(3)}`,
  );
  await service.close();
  if (recall !== 1) {
    console.error('bench: recall below 1.0 for exact search');
    process.exitCode = 1;
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
