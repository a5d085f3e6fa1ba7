import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

let t: TestService;

/** A deterministic pseudo-random vector. */
function vector(seed: number, dim: number): number[] {
  let x = seed * 9301 + 49297;
  return Array.from({ length: dim }, () => {
    x = (x * 9301 + 49297) % 233280;
    return x / 233280 - 0.5;
  });
}

const f32 = (v: number[]) => Array.from(Float32Array.from(v));

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / (Math.sqrt(na) * Math.sqrt(nb));
}

describe('$vectorSearch', () => {
  const DIM = 16;
  const docs = Array.from({ length: 200 }, (_, i) => ({
    i,
    kind: i % 3 === 0 ? 'a' : 'b',
    embedding: vector(i + 1, DIM),
  }));
  beforeAll(async () => {
    t = await startService();
    const schema = await t.request('POST', '/schemas/Doc', {
      as: 'master',
      body: {
        fields: {
          embedding: { type: 'Vector', dimension: DIM },
          kind: { type: 'String' },
          i: { type: 'Number' },
        },
      },
    });
    expect(schema.status, schema.text).toBe(200);
    for (let i = 0; i < docs.length; i += 50) {
      const requests = docs.slice(i, i + 50).map((d) => ({ method: 'POST', path: '/classes/Doc', body: d }));
      expect((await t.request('POST', '/batch', { as: 'master', body: { requests } })).status).toBe(200);
    }
    await t.request('POST', '/classes/Plain', { as: 'master', body: { v: [1, 0, 0], name: 'x' } });
    await t.request('POST', '/classes/Plain', { as: 'master', body: { v: [0, 1, 0], name: 'y' } });
    await t.request('POST', '/classes/Plain', { as: 'master', body: { v: [0.9, 0.1, 0], name: 'xy' } });
  });
  afterAll(() => t.close());

  it('stores a Vector as float32 and reads it back as numbers; the schema shows its dimension', async () => {
    const res = await t.request('GET', '/classes/Doc', { as: 'master', query: { where: { i: 5 } } });
    expect(res.json.results[0].embedding).toEqual(f32(docs[5]!.embedding));
    const schema = await t.request('GET', '/schemas/Doc', { as: 'master' });
    expect(schema.json.fields.embedding).toEqual({ type: 'Vector', dimension: DIM });
    const wrong = await t.request('POST', '/classes/Doc', { as: 'master', body: { embedding: [1, 2] } });
    expect(wrong).toMatchObject({
      status: 400,
      json: { code: 111, error: `embedding is a Vector of dimension ${DIM}; got 2 numbers.` },
    });
  });

  it('answers the exact top-k by cosine, best first, with _score; the same as brute force', async () => {
    const query = vector(999, DIM);
    const res = await t.request('POST', '/aggregate/Doc', {
      as: 'master',
      body: {
        pipeline: [
          { $vectorSearch: { queryVector: query, path: 'embedding', limit: 10 } },
          { $project: { i: 1, _score: 1, _id: 0 } },
        ],
      },
    });
    expect(res.status, res.text).toBe(200);
    const q = f32(query);
    const expected = docs
      .map((d) => ({ i: d.i, score: cosine(f32(d.embedding), q) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 10);
    expect(res.json.results.map((r: { i: number }) => r.i)).toEqual(expected.map((e) => e.i));
    for (const [k, r] of (res.json.results as Array<{ _score: number }>).entries()) {
      expect(r._score).toBeCloseTo(expected[k]!.score, 6);
    }
  });

  it('filters with the where language, and supports dotProduct and euclidean', async () => {
    const query = vector(7, DIM);
    const filtered = await t.request('POST', '/aggregate/Doc', {
      as: 'master',
      body: {
        pipeline: [
          { $vectorSearch: { queryVector: query, path: 'embedding', limit: 5, filter: { kind: 'a' } } },
        ],
      },
    });
    expect(filtered.json.results).toHaveLength(5);
    expect(filtered.json.results.every((r: { kind: string }) => r.kind === 'a')).toBe(true);
    // The document with the same vector is its own nearest neighbour under every similarity.
    for (const similarity of ['cosine', 'dotProduct', 'euclidean']) {
      const own = await t.request('POST', '/aggregate/Doc', {
        as: 'master',
        body: {
          pipeline: [
            { $vectorSearch: { queryVector: docs[6]!.embedding, path: 'embedding', limit: 1, similarity } },
          ],
        },
      });
      if (similarity !== 'dotProduct') expect(own.json.results[0].i).toBe(6);
      expect(typeof own.json.results[0]._score).toBe('number');
    }
    const euclid = await t.request('POST', '/aggregate/Doc', {
      as: 'master',
      body: {
        pipeline: [
          {
            $vectorSearch: {
              queryVector: docs[6]!.embedding,
              path: 'embedding',
              limit: 1,
              similarity: 'euclidean',
            },
          },
        ],
      },
    });
    expect(euclid.json.results[0]._score).toBeCloseTo(0, 5);
  });

  it('follows writes after the first search: updates, deletes and new rows', async () => {
    const search = async (queryVector: number[]) =>
      (
        await t.request('POST', '/aggregate/Doc', {
          as: 'master',
          body: { pipeline: [{ $vectorSearch: { queryVector, path: 'embedding', limit: 1 } }] },
        })
      ).json.results[0];
    const target = vector(31337, DIM);
    expect((await search(target)).i).not.toBe(-1);
    const created = await t.request('POST', '/classes/Doc', {
      as: 'master',
      body: { i: -1, embedding: target },
    });
    expect((await search(target)).i).toBe(-1);
    const moved = vector(4242, DIM);
    await t.request('PUT', `/classes/Doc/${created.json.objectId}`, {
      as: 'master',
      body: { embedding: moved },
    });
    expect((await search(moved)).i).toBe(-1);
    expect((await search(target)).i).not.toBe(-1);
    await t.request('DELETE', `/classes/Doc/${created.json.objectId}`, { as: 'master' });
    expect((await search(moved)).i).not.toBe(-1);
    // A batch that rolls back leaves no trace in the search either.
    const failed = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        transaction: true,
        requests: [
          { method: 'POST', path: '/classes/Doc', body: { i: -2, embedding: target } },
          { method: 'POST', path: '/classes/Doc', body: { embedding: [1] } },
        ],
      },
    });
    expect(failed.status).toBe(400);
    expect((await search(target)).i).not.toBe(-2);
  });

  it('works on Array fields of numbers too', async () => {
    const res = await t.request('POST', '/aggregate/Plain', {
      as: 'master',
      body: { pipeline: [{ $vectorSearch: { queryVector: [1, 0, 0], path: 'v', limit: 2 } }] },
    });
    expect(res.json.results.map((r: { name: string }) => r.name)).toEqual(['x', 'xy']);
  });

  it('refuses a dimension mismatch on an Array field naming both dimensions', async () => {
    const search = (queryVector: number[], filter?: unknown) =>
      t.request('POST', '/aggregate/Plain', {
        as: 'master',
        body: { pipeline: [{ $vectorSearch: { queryVector, path: 'v', limit: 2, filter } }] },
      });
    expect(await search([1, 0])).toMatchObject({
      status: 400,
      json: {
        code: 102,
        error: '$vectorSearch: queryVector has 2 dimensions but Plain.v holds vectors of 3.',
      },
    });
    // A filter that keeps no vector at all answers no results, as any empty search does.
    expect(await search([1, 0], { name: 'none' })).toMatchObject({ status: 200, json: { results: [] } });
    // Vectors of several dimensions: those of the query's dimension are scored.
    await t.request('POST', '/classes/Plain', { as: 'master', body: { v: [1, 0], name: 'two' } });
    expect((await search([1, 0])).json.results.map((r: { name: string }) => r.name)).toEqual(['two']);
    expect(await search([1, 0, 0, 0])).toMatchObject({
      status: 400,
      json: {
        code: 102,
        error: '$vectorSearch: queryVector has 4 dimensions but Plain.v holds vectors of 2 or 3.',
      },
    });
  });

  it('refuses a dimension mismatch naming both dimensions, and bad stages', async () => {
    const res = await t.request('POST', '/aggregate/Doc', {
      as: 'master',
      body: { pipeline: [{ $vectorSearch: { queryVector: [1, 2, 3], path: 'embedding', limit: 3 } }] },
    });
    expect(res).toMatchObject({
      status: 400,
      json: { code: 102, error: `$vectorSearch: queryVector has 3 dimensions but Doc.embedding has ${DIM}.` },
    });
    const notVector = await t.request('POST', '/aggregate/Doc', {
      as: 'master',
      body: { pipeline: [{ $vectorSearch: { queryVector: [1], path: 'kind', limit: 3 } }] },
    });
    expect(notVector).toMatchObject({
      status: 400,
      json: { code: 102, error: '$vectorSearch: kind is not a Vector or Array field of Doc.' },
    });
    const badLimit = await t.request('POST', '/aggregate/Doc', {
      as: 'master',
      body: { pipeline: [{ $vectorSearch: { queryVector: [1], path: 'embedding', limit: 0 } }] },
    });
    expect(badLimit).toMatchObject({
      status: 400,
      json: { code: 102, error: '$vectorSearch limit must be between 1 and 1000.' },
    });
  });
});
