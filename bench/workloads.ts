/**
 * The REST workloads of `npm run bench`: what each one asks, with which credentials, and what a
 * right answer looks like. The same definitions load the service, the bare baseline and the
 * incumbent (bench/vs-incumbent.ts), so every target is asked the same requests.
 */
import {
  BENCH_CLASS,
  BENCH_KEYS,
  MOUNT_PATH,
  N_RANGE,
  PRIVATE_CLASS,
  PRIVATE_ROWS,
  READER,
  type SignedIn,
} from './common.ts';

export interface Workload {
  name: string;
  target: 'service' | 'baseline';
  method: 'GET' | 'POST' | 'PUT';
  path: () => string;
  body?: () => string;
  /** Credentials beyond the REST key (a session token, the master key), with the service's header prefix. */
  headers?: Record<string, string>;
  /** Issue 11's target, as a share of the baseline's get-by-id measured in the same run. */
  target11?: number;
  /** Checks one answer before the run, so a broken workload fails loudly instead of measuring errors. */
  check: (status: number, json: any) => boolean;
  /**
   * What must be equal between two targets seeded with the same rows and asked the same request
   * (bench/vs-incumbent.ts): row values and row counts, never ids, dates or tokens.
   */
  answer: (status: number, json: any) => unknown;
}

/** Header prefixes: the service's own, and the incumbent's (which the service accepts too). */
export type HeaderPrefix = 'X-Backend-' | 'X-Parse-';

/** The fields of a row that both targets store alike (ids, dates and ACL keys differ). */
function values(json: any, fields: string[]): Record<string, unknown> {
  return Object.fromEntries(fields.map((f) => [f, json?.[f]]));
}

/**
 * `random` draws every choice of a request (ids, ranges, values): two targets given generators
 * with the same seed are asked the same requests, row for row.
 */
export function workloads(
  ids: string[],
  signedIn?: SignedIn,
  random: () => number = Math.random,
): Workload[] {
  const randomInt = (n: number) => Math.floor(random() * n);
  const classPath = `${MOUNT_PATH}/classes/${BENCH_CLASS}`;
  const randomId = () => ids[randomInt(ids.length)]!;
  const range = (width: number) => {
    const from = randomInt(N_RANGE - width);
    return encodeURIComponent(JSON.stringify({ n: { $gte: from, $lt: from + width } }));
  };
  const getById: Omit<Workload, 'name' | 'target'> = {
    method: 'GET',
    path: () => `${classPath}/${randomId()}`,
    check: (status, json) => status === 200 && typeof json?.objectId === 'string',
    answer: (status, json) => ({ status, row: values(json, ['n', 'name', 'tags']) }),
  };
  return [
    { name: 'get-by-id (baseline)', target: 'baseline', ...getById },
    { name: 'get-by-id', target: 'service', ...getById },
    {
      name: 'find (range, order, limit=100)',
      target: 'service',
      method: 'GET',
      path: () => `${classPath}?where=${range(500)}&order=n&limit=100`,
      check: (status, json) => status === 200 && Array.isArray(json?.results) && json.results.length > 0,
      // Rows with equal `n` may come in either order: the ordered values are what must agree.
      answer: (status, json) => ({ status, n: json?.results?.map((r: any) => r.n) }),
    },
    {
      name: 'count (range)',
      target: 'service',
      method: 'GET',
      path: () => `${classPath}?where=${range(1_000)}&count=1&limit=0`,
      check: (status, json) => status === 200 && typeof json?.count === 'number' && json.count > 0,
      answer: (status, json) => ({ status, count: json?.count }),
    },
    {
      name: 'create',
      target: 'service',
      method: 'POST',
      path: () => classPath,
      body: () => {
        const n = randomInt(N_RANGE);
        return JSON.stringify({ n, name: `created ${n}`, tags: ['bench', n % 2 ? 'odd' : 'even'] });
      },
      check: (status, json) => status === 201 && typeof json?.objectId === 'string',
      answer: (status, json) => ({ status, created: typeof json?.objectId === 'string' }),
    },
    {
      name: 'update (Increment)',
      target: 'service',
      method: 'PUT',
      path: () => `${classPath}/${randomId()}`,
      body: () => '{"n2":{"__op":"Increment","amount":1}}',
      check: (status, json) => status === 200 && typeof json?.n2 === 'number',
      answer: (status, json) => ({ status, n2: json?.n2 }),
    },
    ...signedInWorkloads(ids, signedIn, randomInt),
  ];
}

/**
 * Issue 11: the path real users take. A user in role Readers, with a session token, on a class
 * where half the rows are private to role:Readers and their owner.
 */
function signedInWorkloads(
  benchIds: string[],
  signedIn: SignedIn | undefined,
  randomInt: (n: number) => number,
): Workload[] {
  const privatePath = `${MOUNT_PATH}/classes/${PRIVATE_CLASS}`;
  const session = { 'X-Backend-Session-Token': signedIn?.sessionToken ?? '' };
  const master = { 'X-Backend-Master-Key': BENCH_KEYS.masterKey };
  const ids = signedIn?.ids ?? [];
  const window = () => {
    const from = randomInt(Math.max(1, PRIVATE_ROWS - 10));
    return encodeURIComponent(JSON.stringify({ score: { $gte: from, $lt: from + 10 } }));
  };
  return [
    {
      name: 'signed-in get-by-id (half private)',
      target: 'service',
      method: 'GET',
      headers: session,
      target11: 0.5,
      path: () => `${privatePath}/${ids[randomInt(ids.length)]}`,
      check: (status, json) => status === 200 && typeof json?.objectId === 'string',
      answer: (status, json) => ({ status, row: values(json, ['score', 'label']) }),
    },
    {
      name: 'signed-in find (score window of 10, no index, order=-score)',
      target: 'service',
      method: 'GET',
      headers: session,
      target11: 0.08,
      path: () => `${privatePath}?where=${window()}&order=-score&limit=100`,
      check: (status, json) => status === 200 && Array.isArray(json?.results),
      answer: (status, json) => ({ status, score: json?.results?.map((r: any) => r.score) }),
    },
    {
      name: 'signed-in count (whole class)',
      target: 'service',
      method: 'GET',
      headers: session,
      target11: 0.08,
      path: () => `${privatePath}?count=1&limit=0`,
      check: (status, json) => status === 200 && json?.count === PRIVATE_ROWS,
      answer: (status, json) => ({ status, count: json?.count }),
    },
    {
      name: 'create (REST key, public-read ACL)',
      target: 'service',
      method: 'POST',
      target11: 0.25,
      path: () => privatePath,
      body: () =>
        JSON.stringify({ score: randomInt(PRIVATE_ROWS), label: 'new', ACL: { '*': { read: true } } }),
      check: (status, json) => status === 201 && typeof json?.objectId === 'string',
      answer: (status, json) => ({ status, created: typeof json?.objectId === 'string' }),
    },
    {
      name: 'update with Increment (master)',
      target: 'service',
      method: 'PUT',
      headers: master,
      target11: 0.25,
      path: () => `${privatePath}/${ids[randomInt(ids.length)] ?? benchIds[0]}`,
      body: () => '{"score":{"__op":"Increment","amount":1}}',
      check: (status, json) => status === 200 && typeof json?.score === 'number',
      answer: (status, json) => ({ status, score: json?.score }),
    },
    {
      name: 'login',
      target: 'service',
      method: 'POST',
      path: () => `${MOUNT_PATH}/login`,
      body: () => JSON.stringify(READER),
      check: (status, json) => status === 200 && typeof json?.sessionToken === 'string',
      answer: (status, json) => ({
        status,
        username: json?.username,
        session: typeof json?.sessionToken === 'string',
      }),
    },
  ];
}

/** BENCH_ONLY: a comma list of workload names or prefixes, e.g. `get-by-id,create`. */
const ONLY = (process.env.BENCH_ONLY ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);

export function selected(all: Workload[]): Workload[] {
  if (ONLY.length === 0) return all;
  const picked = all.filter((w) => ONLY.some((o) => w.name.startsWith(o)));
  if (picked.length === 0) throw new Error(`BENCH_ONLY=${ONLY.join(',')} matches no workload`);
  return picked;
}

/** A workload's headers, with the target's header prefix. */
export function headersFor(w: Workload, prefix: HeaderPrefix = 'X-Backend-'): Record<string, string> {
  const headers: Record<string, string> = {
    [`${prefix}Application-Id`]: BENCH_KEYS.appId,
    [`${prefix}REST-API-Key`]: BENCH_KEYS.restAPIKey,
  };
  for (const [name, value] of Object.entries(w.headers ?? {})) {
    headers[name.replace(/^X-Backend-/, prefix)] = value;
  }
  return w.body ? { ...headers, 'Content-Type': 'application/json' } : headers;
}

/** One request of the workload (a fresh draw of its path and body), answered as status and JSON. */
export async function ask(
  origin: string,
  w: Workload,
  prefix: HeaderPrefix = 'X-Backend-',
): Promise<{ status: number; json: unknown; text: string }> {
  const res = await fetch(`${origin}${w.path()}`, {
    method: w.method,
    headers: headersFor(w, prefix),
    body: w.body?.(),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

export async function check(origin: string, w: Workload, prefix: HeaderPrefix = 'X-Backend-'): Promise<void> {
  const { status, json, text } = await ask(origin, w, prefix);
  if (!w.check(status, json)) {
    throw new Error(`${w.name}: unexpected answer ${status} ${text.slice(0, 300)}`);
  }
}
