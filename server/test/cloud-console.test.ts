import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * What cloud code writes with `console` while it serves a request reaches the process's output as
 * the logs explorer keeps it: scrubbed of secret keys and of the app's keys (cloud/console.ts).
 */
const CLOUD = fileURLToPath(new URL('./fixtures/logs-cloud.ts', import.meta.url));

describe("cloud code's console output", () => {
  let t: TestService;
  const written: Array<[string, string]> = [];
  const originals = { log: console.log, warn: console.warn };

  beforeAll(async () => {
    // In place before the service wraps the console, so the wrapper writes here.
    console.log = (...args: unknown[]) => void written.push(['log', args.map(String).join(' ')]);
    console.warn = (...args: unknown[]) => void written.push(['warn', args.map(String).join(' ')]);
    t = await startService({ cloud: CLOUD });
  });
  afterAll(async () => {
    await t?.close();
    console.log = originals.log;
    console.warn = originals.warn;
  });

  /** Calls the fixture's `shout` (it logs a password and the master key) and answers what was written. */
  async function shout(service: TestService, word: string): Promise<Array<[string, string]>> {
    written.length = 0;
    const res = await service.request('POST', '/functions/shout', { body: { word, key: KEYS.masterKey } });
    expect(res.status).toBe(200);
    return [...written];
  }

  it("writes a request's console lines scrubbed: no password, no key", async () => {
    expect(await shout(t, 'hello')).toEqual([
      ['log', 'shouting hello'],
      ['warn', '{"password":"[FILTERED]","note":"kept"} [FILTERED]'],
    ]);
  });

  it('scrubs them the same in a service that keeps no request lines', async () => {
    const quiet = await startService({ cloud: CLOUD, requestLogSize: 0 });
    try {
      expect(await shout(quiet, 'quietly')).toEqual([
        ['log', 'shouting quietly'],
        ['warn', '{"password":"[FILTERED]","note":"kept"} [FILTERED]'],
      ]);
    } finally {
      await quiet.close();
    }
  });

  it('leaves console calls outside a request as they are', () => {
    written.length = 0;
    console.log('outside', { password: 'not-a-request' });
    expect(written).toEqual([['log', 'outside [object Object]']]);
  });
});
