import { afterAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../src/config/options.ts';
import { clientAddressOf } from '../src/kernel/client-address.ts';
import { CLOUD_MODULE } from './helpers/cloud.ts';
import { expectLimited, raw } from './helpers/raw-http.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * Option `trustProxy` (kernel/client-address.ts): where the client's address comes from, for the
 * rate limits and cloud code's `request.ip`. The chain is the socket's address, then
 * X-Forwarded-For from right to left; the client is the first address in it that is not a trusted
 * proxy. Requests here come from 127.0.0.1, the proxy in front of the service.
 */

describe('trustProxy: the client is the right-most untrusted address', () => {
  const services: TestService[] = [];
  afterAll(async () => {
    for (const t of services) await t.close();
  });
  async function start(trustProxy: unknown, extra: Record<string, unknown> = {}) {
    const t = await startService({ cloud: CLOUD_MODULE, trustProxy, ...extra });
    services.push(t);
    return t;
  }
  const ipOf = async (t: TestService, forwardedFor?: string | string[]) =>
    (
      await raw(t, 'POST', '/api/functions/whoami', {
        body: {},
        headers: forwardedFor === undefined ? {} : { 'X-Forwarded-For': forwardedFor },
      })
    ).json.result.ip;

  it.each([
    [
      'false (the default): the socket address, whatever X-Forwarded-For says',
      {
        trustProxy: false,
        client: '127.0.0.1',
      },
    ],
    [
      'true: every hop is trusted, the left-most address (for a proxy that overwrites the header)',
      {
        trustProxy: true,
        client: '203.0.113.9',
      },
    ],
  ])('%s', async (_name, { trustProxy, client }) => {
    const t = await start(trustProxy);
    expect(await ipOf(t, '203.0.113.9, 198.51.100.2')).toBe(client);
    expect(await ipOf(t)).toBe('127.0.0.1');
  });

  it('1 hop: the proxy appends, so the right-most X-Forwarded-For address is the client', async () => {
    const t = await start(1);
    expect(await ipOf(t, 'spoofed, 203.0.113.9')).toBe('203.0.113.9');
    expect(await ipOf(t, '203.0.113.9')).toBe('203.0.113.9');
    expect(await ipOf(t)).toBe('127.0.0.1');
    // Several headers are one list, in order.
    expect(await ipOf(t, ['10.0.0.1, spoofed', '203.0.113.10'])).toBe('203.0.113.10');
  });

  it('2 hops: the address two from the right (socket included: the second proxy wrote the last)', async () => {
    const t = await start(2);
    expect(await ipOf(t, 'spoofed, 203.0.113.9, 10.0.0.2')).toBe('203.0.113.9');
    // Fewer addresses than hops: the left-most there is.
    expect(await ipOf(t, '203.0.113.9')).toBe('203.0.113.9');
  });

  it('a list of trusted proxies and CIDRs: walk from the socket while trusted', async () => {
    const t = await start(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
    expect(await ipOf(t, 'spoofed, 203.0.113.9, 10.1.2.3, 10.9.9.9')).toBe('203.0.113.9');
    expect(await ipOf(t, '203.0.113.9, fd00::1')).toBe('203.0.113.9');
    // An address nobody trusts stops the walk even if it is not the last one.
    expect(await ipOf(t, '10.0.0.1, 198.51.100.7, 10.0.0.2')).toBe('198.51.100.7');
    const named = await start(['loopback']);
    expect(await ipOf(named, 'spoofed, 203.0.113.11')).toBe('203.0.113.11');
    const other = await start(['10.0.0.0/8']);
    expect(await ipOf(other, 'spoofed, 203.0.113.9')).toBe('127.0.0.1');
  });

  it('the rate limit follows the real client: a spoofing client is limited by its real address', async () => {
    const t = await start(1, {
      rateLimit: [{ path: '^/login$', methods: ['POST'], window: 60, max: 2, by: 'ip' }],
      passwordHashCost: 12,
    });
    const login = (forwardedFor: string) =>
      raw(t, 'POST', '/api/login', {
        body: { username: 'x', password: 'y' },
        headers: { 'X-Forwarded-For': forwardedFor },
      });
    for (let i = 0; i < 2; i++) expect((await login(`198.51.100.${i}, 203.0.113.9`)).status).toBe(404);
    expectLimited(await login('198.51.100.77, 203.0.113.9'), 2, 60);
    expectLimited(await login('203.0.113.9'), 2, 60);
    // Another client behind the same proxy has its own count.
    expect((await login('203.0.113.9, 203.0.113.50')).status).toBe(404);
  });

  it('a bad value stops the service with a message naming trustProxy', async () => {
    for (const [value, message] of [
      [
        ['10.0.0.0/33'],
        'Invalid option "trustProxy": "10.0.0.0/33" is not an IP address, a CIDR or one of loopback, linklocal, uniquelocal.',
      ],
      [
        ['proxy.example.com'],
        'Invalid option "trustProxy": "proxy.example.com" is not an IP address, a CIDR or one of loopback, linklocal, uniquelocal.',
      ],
      [
        -1,
        'Invalid option "trustProxy": must be true, false, a number of trusted hops or a list of trusted proxy addresses.',
      ],
      [
        1.5,
        'Invalid option "trustProxy": must be true, false, a number of trusted hops or a list of trusted proxy addresses.',
      ],
      [
        'yes',
        'Invalid option "trustProxy": must be true, false, a number of trusted hops or a list of trusted proxy addresses.',
      ],
    ] as const) {
      expect(() => validateOptions({ appId: 'a', masterKey: '12345678', trustProxy: value })).toThrow(
        message,
      );
      await expect(startService({ trustProxy: value })).rejects.toThrow(message);
    }
  });
});

describe('clientAddressOf: the chain as Express walks it', () => {
  it('a socket address in IPv4-mapped IPv6 form is the same proxy as its IPv4 form', () => {
    const of = clientAddressOf(['127.0.0.1']);
    expect(of('::ffff:127.0.0.1', 'spoofed, 203.0.113.9')).toBe('203.0.113.9');
    expect(clientAddressOf(['::ffff:10.0.0.0/104'])('10.0.0.1', 'x, 203.0.113.9')).toBe('203.0.113.9');
  });

  it('spaces and empty entries of X-Forwarded-For are skipped; a socket nobody trusts ends the walk', () => {
    expect(clientAddressOf(1)('127.0.0.1', ' spoofed ,, 203.0.113.9 , ')).toBe('203.0.113.9');
    expect(clientAddressOf(['10.0.0.0/8'])('198.51.100.1', '203.0.113.9')).toBe('198.51.100.1');
    expect(clientAddressOf(0)('127.0.0.1', '203.0.113.9')).toBe('127.0.0.1');
    expect(clientAddressOf(3)('127.0.0.1', 'a, b, c, d')).toBe('b');
    expect(clientAddressOf(1)(undefined, '203.0.113.9')).toBe(undefined);
  });
});
