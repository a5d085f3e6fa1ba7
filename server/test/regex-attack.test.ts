import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Issue 10, finding 1, replayed as it was found: sign up `a…a!` and query `/users` with
 * `{"username":{"$regex":"(a|a)+$"}}` using application keys only. With a backtracking engine 27
 * characters took 5 to 8 s (each one more doubling it) and every other request, `/health` too,
 * waited; RE2 answers in time linear in the input.
 *
 * And `$regex` runs only on rows the caller may read. The proof counts: every value the engine is
 * handed (the SQLite function and the in-memory matcher both go through `query/regex.ts`) is
 * recorded by a wrapper around the real functions, so a test can show that no value of a row the
 * caller cannot read ever reached the engine, and a control (the owner's query) shows that the
 * recording does see those rows when they are readable.
 */

const seen = vi.hoisted(() => ({ values: [] as unknown[] }));

vi.mock('../src/query/regex.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/query/regex.ts')>();
  return {
    ...real,
    regexTest: (source: string, flags: string, value: unknown) => {
      seen.values.push(value);
      return real.regexTest(source, flags, value);
    },
    regexTester: (source: string, flags: string) => {
      const test = real.regexTester(source, flags);
      return (value: unknown) => {
        seen.values.push(value);
        return test(value);
      };
    },
  };
});

/** Samples `/health` until `done` resolves; answers each sample's status and time (ms). */
async function sampleHealth(url: string, done: Promise<unknown>) {
  const samples: Array<{ status: number; ms: number }> = [];
  let running = true;
  void done.finally(() => {
    running = false;
  });
  do {
    const started = performance.now();
    const res = await fetch(`${url}/health`);
    await res.text();
    samples.push({ status: res.status, ms: performance.now() - started });
    await new Promise((r) => setTimeout(r, 5));
  } while (running);
  return samples;
}

describe('the original attack: a backtracking $regex on /users with application keys', () => {
  let t: TestService;
  const names = ['a'.repeat(27), 'a'.repeat(33), 'a'.repeat(40)].map((a) => `${a}!`);
  const all = [...names, 'bbbaaaa'];
  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
    for (const username of all) {
      const res = await t.request('POST', '/users', { body: { username, password: 'pw' } });
      expect(res.status).toBe(201);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Patterns exponential for a backtracking engine on `a…a!`, and what they match among the users. */
  const patterns: Array<[string, string[]]> = [
    ['(a|a)+$', ['bbbaaaa']],
    ['(a|aa)+$', ['bbbaaaa']],
    ['^(a+)+$', []],
    ['(a*)*b', ['bbbaaaa']],
    ['^(a|a?)+$', []],
  ];

  /** Ten copies of the query at once, with /health sampled throughout; all answers and the samples. */
  async function attack(as: 'rest' | 'master', pattern: string) {
    const query = { where: { username: { $regex: pattern } } };
    const started = performance.now();
    const answers = Promise.all(Array.from({ length: 10 }, () => t.request('GET', '/users', { as, query })));
    const health = sampleHealth(t.url, answers);
    const results = await answers;
    const elapsed = performance.now() - started;
    const samples = await health;
    expect(samples.length).toBeGreaterThan(0);
    for (const s of samples) {
      expect(s.status).toBe(200);
      expect(s.ms).toBeLessThan(2000);
    }
    expect(elapsed).toBeLessThan(2000);
    return results.map((res) => {
      expect(res.status).toBe(200);
      return (res.json.results as Array<{ username: string }>).map((u) => u.username).sort();
    });
  }

  for (const [pattern, matching] of patterns) {
    it(`${pattern}, application keys: answers at once, /health answers during it, no user row reaches the engine`, async () => {
      seen.values.length = 0;
      // Users are readable by themselves only: an anonymous caller finds none, and since the access
      // condition is applied first, no username was ever handed to the pattern.
      for (const found of await attack('rest', pattern)) expect(found).toEqual([]);
      expect(seen.values.filter((v) => all.includes(v as string))).toEqual([]);
    });

    it(`${pattern}, master key (every row tested, up to 41 characters): linear time, right answer`, async () => {
      seen.values.length = 0;
      for (const found of await attack('master', pattern)) expect(found).toEqual(matching);
      // The engine did run on the 41-character name (a backtracking engine: days).
      expect(seen.values).toContain(names[2]);
    });
  }

  it('a name of 5,000 characters and a pattern near the size bound answer at once too', async () => {
    const long = `${'a'.repeat(5000)}!`;
    const signUp = await t.request('POST', '/users', { body: { username: long, password: 'pw' } });
    expect(signUp.status).toBe(201);
    seen.values.length = 0;
    const started = performance.now();
    const res = await t.request('GET', '/users', {
      as: 'master',
      query: {
        where: {
          $or: [{ username: { $regex: '(a|aa)+$' } }, { username: { $regex: `${'(a|a)+'.repeat(100)}$` } }],
        },
      },
    });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(res.status).toBe(200);
    expect(res.json.results.map((u: { username: string }) => u.username)).toEqual(['bbbaaaa']);
    expect(seen.values).toContain(long);
    await t.request('DELETE', `/users/${signUp.json.objectId}`, { as: 'master' });
  });

  it('the same in a batch with application keys', async () => {
    const started = performance.now();
    const batch = await t.request('POST', '/batch', {
      as: 'rest',
      body: {
        requests: [
          { method: 'GET', path: '/users', body: { where: { username: { $regex: '(a|a)+$' } } } },
          { method: 'GET', path: '/classes/_User', body: { where: { username: { $regex: '(a|aa)+$' } } } },
        ],
      },
    });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(batch.status).toBe(200);
    expect(batch.json).toEqual([{ success: { results: [] } }, { success: { results: [] } }]);
  });
});

describe('$regex runs only on rows the caller may read', () => {
  let t: TestService;
  let owner: { objectId: string; sessionToken: string };
  beforeAll(async () => {
    t = await startService({ passwordHashCost: 12 });
    const signUp = await t.request('POST', '/users', { body: { username: 'owner', password: 'pw' } });
    owner = signUp.json;
    await t.request('POST', '/schemas/Secret', {
      as: 'master',
      body: { fields: { title: { type: 'String' }, o: { type: 'Object' } } },
    });
    const rows = [];
    for (let i = 0; i < 20; i++) {
      // Private rows: readable by their owner only.
      rows.push({
        method: 'POST',
        path: '/classes/Secret',
        body: {
          title: `PRIVATE-${i}-${'a'.repeat(30)}!`,
          o: { t: `PRIVATE-NESTED-${i}` },
          ACL: { [owner.objectId]: { read: true, write: true } },
        },
      });
      rows.push({
        method: 'POST',
        path: '/classes/Secret',
        body: { title: `public-${i}`, o: { t: `public-nested-${i}` }, ACL: { '*': { read: true } } },
      });
    }
    const res = await t.request('POST', '/batch', { as: 'master', body: { requests: rows } });
    expect(res.json.every((r: { success?: unknown }) => r.success)).toBe(true);
    await t.request('POST', '/schemas/Ref', {
      as: 'master',
      body: { fields: { secret: { type: 'Pointer', targetClass: 'Secret' } } },
    });
    // Public rows pointing at every Secret row, so that the subquery has rows to narrow.
    const secrets = await t.request('GET', '/classes/Secret', { as: 'master', query: { limit: 100 } });
    const refs = secrets.json.results.map((s: { objectId: string }) => ({
      method: 'POST',
      path: '/classes/Ref',
      body: { secret: { __type: 'Pointer', className: 'Secret', objectId: s.objectId } },
    }));
    expect((await t.request('POST', '/batch', { as: 'master', body: { requests: refs } })).status).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });

  const privateSeen = () => seen.values.filter((v) => typeof v === 'string' && v.startsWith('PRIVATE'));

  const wheres: Array<[string, unknown]> = [
    ['a $regex on a field', { title: { $regex: '(a|a)+$' } }],
    ['a $regex with a plain condition beside it', { title: { $regex: 'x' }, o: { $exists: true } }],
    ['a $regex below an Object field', { 'o.t': { $regex: '^(a+)+$' } }],
    ['a $regex inside $or', { $or: [{ title: { $regex: 'a+$' } }, { title: 'nothing' }] }],
    ['a $regex inside $nor', { $nor: [{ title: { $regex: 'zzz' } }] }],
  ];

  for (const [name, where] of wheres) {
    it(`${name}: anonymous callers never hand a private value to the engine (find and count)`, async () => {
      seen.values.length = 0;
      const find = await t.request('GET', '/classes/Secret', { as: 'rest', query: { where } });
      expect(find.status).toBe(200);
      const count = await t.request('GET', '/classes/Secret', {
        as: 'rest',
        query: { where, count: 1, limit: 0 },
      });
      expect(count.status).toBe(200);
      // The engine did run (on the public rows), and never on a private one.
      expect(seen.values.length).toBeGreaterThan(0);
      expect(privateSeen()).toEqual([]);
      for (const row of find.json.results) expect(String(row.title)).toMatch(/^public-/);
    });
  }

  it('a $regex in $notInQuery or $select on the private class runs on readable rows only', async () => {
    const inner = { className: 'Secret', where: { title: { $regex: '(a|a)+$' } } };
    for (const where of [
      { secret: { $notInQuery: inner } },
      { secret: { $inQuery: { ...inner, where: { $or: [{ 'o.t': { $regex: 'x' } }, inner.where] } } } },
    ]) {
      seen.values.length = 0;
      const res = await t.request('GET', '/classes/Ref', { as: 'rest', query: { where } });
      expect(res.status).toBe(200);
      expect(seen.values.length, JSON.stringify(where)).toBeGreaterThan(0);
      expect(privateSeen()).toEqual([]);
    }
    seen.values.length = 0;
    const select = await t.request('GET', '/classes/Secret', {
      as: 'rest',
      query: { where: { title: { $select: { query: inner, key: 'title' } } } },
    });
    expect(select.status).toBe(200);
    expect(seen.values.length).toBeGreaterThan(0);
    expect(privateSeen()).toEqual([]);
  });

  it('a $regex in an $inQuery on the private class runs on readable rows only', async () => {
    seen.values.length = 0;
    const res = await t.request('GET', '/classes/Ref', {
      as: 'rest',
      query: {
        where: { secret: { $inQuery: { className: 'Secret', where: { title: { $regex: '(a|a)+$' } } } } },
      },
    });
    expect(res.status).toBe(200);
    expect(res.json.results).toEqual([]);
    expect(seen.values.length).toBeGreaterThan(0);
    expect(privateSeen()).toEqual([]);
  });

  it('control: the owner reads the private rows, and then their values do reach the engine', async () => {
    seen.values.length = 0;
    const res = await t.request('GET', '/classes/Secret', {
      as: 'rest',
      sessionToken: owner.sessionToken,
      query: { where: { title: { $regex: '(a|a)+$' } } },
    });
    expect(res.status).toBe(200);
    // The private titles end in `!`: none matches, but each was tested.
    expect(res.json.results).toEqual([]);
    expect(privateSeen()).toHaveLength(20);
  });
});
