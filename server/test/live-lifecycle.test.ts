import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveClient } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

let t: TestService;

beforeAll(async () => {
  t = await startService({ allowClientClassCreation: true });
});
afterAll(async () => {
  await t?.close();
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** One cycle: open, connect (half with a session token), subscribe twice, disconnect. */
async function cycle(token: string, i: number): Promise<void> {
  const c = await LiveClient.open(t);
  c.send({
    op: 'connect',
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    ...(i % 2 ? { sessionToken: token } : {}),
  });
  await c.take();
  c.send({ op: 'subscribe', requestId: 1, query: { className: 'Cycle', where: { n: { $gt: i % 7 } } } });
  c.send({ op: 'subscribe', requestId: 2, query: { className: 'Other' }, sessionToken: token });
  await c.take();
  await c.take();
  c.close();
  await c.waitClosed();
}

async function run(count: number, token: string, parallel = 16): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) await cycle(token, next++);
    }),
  );
}

async function drained(): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const s = t.service.live.sizes();
    if (s.connections === 0 && s.subscriptions === 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

describe('realtime: a disconnected client frees everything', () => {
  it('a few thousand connect/subscribe/disconnect cycles leave the registry empty', async () => {
    const user = await t.request('POST', '/users', { body: { username: 'cycler', password: 'pw-123456' } });
    await run(3000, user.json.sessionToken);
    await drained();
    expect(t.service.live.sizes()).toMatchObject({ connections: 0, subscriptions: 0, classes: 0, tokens: 0 });
  }, 120_000);

  it('no heap growth over 10,000 cycles (measured)', async () => {
    const user = await t.request('POST', '/users', { body: { username: 'cycler2', password: 'pw-123456' } });
    const token = user.json.sessionToken;
    await run(1000, token);
    await drained();
    const before = heap();
    const started = Date.now();
    await run(10_000, token);
    await drained();
    const after = heap();
    const growth = after - before;
    console.log(
      `live: 10,000 cycles in ${Date.now() - started} ms, heap ${Math.round(before / 1e6)} MB -> ${Math.round(after / 1e6)} MB (growth ${Math.round(growth / 1024)} KB)`,
    );
    expect(t.service.live.sizes()).toMatchObject({ connections: 0, subscriptions: 0, classes: 0, tokens: 0 });
    // 10,000 leaked connections with two subscriptions each would be tens of megabytes.
    expect(growth).toBeLessThan(8 * 1024 * 1024);
  }, 120_000);
});
