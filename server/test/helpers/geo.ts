import { expect } from 'vitest';
import type { ClassSchema } from '../../src/kernel/schema.ts';
import { compileMatcher } from '../../src/query/match.ts';
import { parseWhere } from '../../src/query/parse.ts';
import { type Dialect, Params } from '../../src/storage/sql/dialect.ts';
import { WhereCompiler } from '../../src/storage/sql/where.ts';
import type { TestService } from './service.ts';

export const gp = (latitude: number, longitude: number) => ({ __type: 'GeoPoint', latitude, longitude });

/** The objectIds a where finds through the REST API (master key), sorted. */
export async function found(t: TestService, where: unknown, className = 'Place'): Promise<string[]> {
  const res = await t.request('GET', `/classes/${className}`, {
    as: 'master',
    query: { where, limit: 1000, keys: 'objectId' },
  });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json.results.map((r: { objectId: string }) => r.objectId).sort();
}

/** The where SQL a store with `dialect` builds for `where` on `schema`, and its parameters. */
export function compiledWhere(dialect: Dialect, where: unknown, schema: ClassSchema, alias: string) {
  const params = new Params(dialect.placeholder);
  const sql = new WhereCompiler(dialect, params, () => undefined).compile(parseWhere(where), schema, alias);
  return { sql, values: params.values };
}

/**
 * Writes `bodies` as rows of class Place (batches of 50), and answers the rows as stored, the
 * class, and what the in-memory matcher finds for a where among them (objectIds, sorted).
 */
export async function seedPlaces(t: TestService, bodies: ReadonlyArray<Record<string, unknown>>) {
  for (let i = 0; i < bodies.length; i += 50) {
    const batch = await t.request('POST', '/batch', {
      as: 'master',
      body: {
        requests: bodies.slice(i, i + 50).map((body) => ({ method: 'POST', path: '/classes/Place', body })),
      },
    });
    expect(batch.status).toBe(200);
    expect(batch.json.every((r: { success?: unknown }) => r.success)).toBe(true);
  }
  const all = await t.request('GET', '/classes/Place', { as: 'master', query: { limit: 1000 } });
  const stored: Array<Record<string, unknown>> = all.json.results;
  expect(stored).toHaveLength(bodies.length);
  const schema: ClassSchema = (await t.request('GET', '/schemas/Place', { as: 'master' })).json;
  const expected = (where: unknown) =>
    stored
      .filter(compileMatcher(parseWhere(where), schema))
      .map((r) => r.objectId as string)
      .sort();
  return { stored, schema, expected };
}
