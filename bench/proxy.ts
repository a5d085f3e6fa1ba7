/**
 * Child process: a small round-robin TCP proxy in front of several service instances (`--store
 * postgres --instances 2`, bench/run.ts). Each incoming connection goes to the next instance in
 * turn and stays there (keep-alive connections, as a load balancer in front of them would do).
 */

import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:net';
import { exitWithParent, send } from './common.ts';

const targets = (process.env.BENCH_PROXY_TARGETS ?? '')
  .split(',')
  .filter(Boolean)
  .map((origin) => new URL(origin));
if (targets.length === 0) throw new Error('BENCH_PROXY_TARGETS is required');

let next = 0;
const server = createServer((client) => {
  const target = targets[next++ % targets.length]!;
  const upstream = connect(Number(target.port), target.hostname);
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  client.pipe(upstream).pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
});
exitWithParent(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
    }),
);
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  send({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
