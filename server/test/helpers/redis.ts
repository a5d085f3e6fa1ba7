import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

/** The Redis the tests use (a real server; tests that need it are skipped, saying so, without it). */
export const REDIS_URL = process.env.BDS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a Redis answers at REDIS_URL (asked once per test file). */
export async function redisAnswers(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** A key prefix no other test uses, and a connection to inspect and clean up under it. */
export function testPrefix(): { prefix: string; admin: Redis; cleanup(): Promise<void> } {
  const prefix = `bds-test:${randomUUID()}:`;
  const admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  return {
    prefix,
    admin,
    async cleanup() {
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await admin.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      admin.disconnect();
    },
  };
}

/** Kills (CLIENT KILL ID) the connections whose name starts with `name`; answers how many. */
export async function killClients(admin: Redis, name: string): Promise<number> {
  const list = (await admin.client('LIST')) as string;
  let killed = 0;
  for (const line of list.split('\n')) {
    const fields = Object.fromEntries(line.split(' ').map((kv) => kv.split('=') as [string, string]));
    if (fields.name?.startsWith(name)) {
      await admin.client('KILL', 'ID', fields.id!);
      killed++;
    }
  }
  return killed;
}
