import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

/**
 * `limit` and `skip` (issue 10: `skip=99999999999999999999` answered 200 with no results): a whole
 * number from 0 to 2^53 - 1 is accepted, anything past it is a 400 with code 102 and a text naming
 * the parameter, for the query string and for a `_method: GET` body alike.
 */
const MAX = Number.MAX_SAFE_INTEGER;
const tooLarge = (name: string) => `Invalid ${name}: it must be a whole number from 0 to ${MAX}.`;
const notWhole = (name: string) => `Invalid ${name}: it must be a whole number >= 0.`;

describe('limit and skip beyond the safe range', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
    await t.request('POST', '/classes/Thing', { as: 'master', body: { n: 1 } });
  });
  afterAll(async () => {
    await t?.close();
  });

  for (const name of ['skip', 'limit']) {
    for (const value of ['99999999999999999999', String(MAX + 1), '1e20', String(2 ** 64)]) {
      it(`${name}=${value} answers 400, code 102, naming ${name}`, async () => {
        const res = await t.request('GET', '/classes/Thing', { query: { [name]: value } });
        expect(res.status).toBe(400);
        expect(res.json).toEqual({ code: 102, error: tooLarge(name) });
      });
    }

    it(`${name} as a JSON number past 2^53 in a _method: GET body answers the same`, async () => {
      const res = await t.request('POST', '/classes/Thing', {
        rawBody: `{"_method":"GET","${name}":99999999999999999999}`,
        headers: { 'Content-Type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ code: 102, error: tooLarge(name) });
    });

    it(`${name}=${MAX} (the largest safe whole number) is accepted`, async () => {
      const res = await t.request('GET', '/classes/Thing', { query: { [name]: String(MAX) } });
      expect(res.status).toBe(200);
      expect(res.json.results).toHaveLength(name === 'skip' ? 0 : 1);
    });

    it(`${name}=1e400 (Infinity) and -1 keep the whole-number text`, async () => {
      for (const value of ['1e400', '-1', '1.5']) {
        const res = await t.request('GET', '/classes/Thing', { query: { [name]: value } });
        expect(res.status).toBe(400);
        expect(res.json).toEqual({ code: 102, error: notWhole(name) });
      }
    });
  }

  it('a batch member with skip past 2^53 gets the same error', async () => {
    const res = await t.request('POST', '/batch', {
      body: { requests: [{ method: 'GET', path: '/classes/Thing', body: { skip: 1e20 } }] },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual([{ error: { code: 102, error: tooLarge('skip') } }]);
  });

  it('property: any whole number either pages (<= 2^53 - 1) or is refused with 102 naming it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('skip', 'limit'),
        fc.oneof(
          fc.bigInt({ min: 0n, max: BigInt(MAX) }),
          fc.bigInt({ min: BigInt(MAX) + 1n, max: 10n ** 40n }),
        ),
        async (name, n) => {
          const res = await t.request('GET', '/classes/Thing', { query: { [name]: n.toString() } });
          if (n <= BigInt(MAX)) {
            expect(res.status).toBe(200);
            expect(Array.isArray(res.json.results)).toBe(true);
          } else {
            expect(res.status).toBe(400);
            expect(res.json).toEqual({ code: 102, error: tooLarge(name) });
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
