/**
 * `npm run bench -- push`: one push to BENCH_INSTALLATIONS installations (default 100,000, half
 * iOS over APNs, half Android over FCM) against the local fake providers of the tests (loopback
 * only). Reports the time from POST /push to `succeeded` and the notifications per second.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createService } from '../server/src/index.ts';
import { MASTER } from '../server/src/kernel/caller.ts';
import { ctxOf } from '../server/src/kernel/context.ts';
import { startFakePush } from '../server/test/helpers/fake-push.ts';
import { BENCH_KEYS } from './common.ts';

const N = Number(process.env.BENCH_INSTALLATIONS ?? 100_000);

const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-bench-push-'));
const fake = await startFakePush();
try {
  const service = await createService({ ...BENCH_KEYS, dataDir, logLevel: 'warn', push: fake.options });
  const { url } = await service.listen(0, '127.0.0.1');
  const ctx = ctxOf(MASTER, 'system');
  console.log(`bench: seeding ${N} installations through the write pipeline...`);
  for (let start = 0; start < N; start += 1000) {
    await service.core.store.transaction(async () => {
      for (let i = start; i < Math.min(N, start + 1000); i++) {
        await service.data.writes.create(ctx, '_Installation', {
          installationId: `bench-${i}`,
          deviceType: i % 2 ? 'android' : 'ios',
          deviceToken: `token-${i}`,
          channels: ['all'],
        });
      }
    });
  }
  const headers = {
    'X-Backend-Application-Id': BENCH_KEYS.appId,
    'X-Backend-Master-Key': BENCH_KEYS.masterKey,
    'Content-Type': 'application/json',
  };
  const started = performance.now();
  const res = await fetch(`${url}/push`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ channels: ['all'], data: { alert: 'bench' } }),
  });
  const id = res.headers.get('x-backend-push-status-id');
  if (!id) throw new Error(`POST /push answered ${res.status}: ${await res.text()}`);
  let status: Record<string, unknown> = {};
  for (;;) {
    status = (await (await fetch(`${url}/classes/_PushStatus/${id}`, { headers })).json()) as Record<
      string,
      unknown
    >;
    if (status.status === 'succeeded' || status.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - started) / 1000;
  console.log('');
  console.log(
    `push: ${N} installations (APNs + FCM fakes on loopback), concurrency ${service.options.push?.concurrency}`,
  );
  console.log(
    `  ${status.status}: sent ${status.numSent}, failed ${status.numFailed} in ${seconds.toFixed(1)} s = ${Math.round(Number(status.numSent) / seconds)} notifications/s`,
  );
  await service.close();
  if (status.numSent !== N) process.exitCode = 1;
} finally {
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
}
