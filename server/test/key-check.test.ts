import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveClient } from './helpers/live.ts';
import { KEYS, startService, type TestService } from './helpers/service.ts';

/**
 * REST and realtime check a caller's keys by one rule (kernel/keys.ts keyAuthority): every
 * combination below is accepted or refused the same way by a REST request and a connect frame,
 * and a master key gives master authority on both.
 */

let t: TestService;
beforeAll(async () => {
  t = await startService({ liveQuery: { classNames: ['*'] } });
});
afterAll(async () => {
  await t?.close();
});

interface Keys {
  applicationId?: string;
  masterKey?: string;
  restAPIKey?: string;
  javascriptKey?: string;
  clientKey?: string;
}

const HEADER: Record<keyof Keys, string> = {
  applicationId: 'X-Parse-Application-Id',
  masterKey: 'X-Parse-Master-Key',
  restAPIKey: 'X-Parse-REST-API-Key',
  javascriptKey: 'X-Parse-Javascript-Key',
  clientKey: 'X-Parse-Client-Key',
};

const CASES: Array<[string, Keys, 'master' | 'client' | 'refused']> = [
  ['the REST key', { applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey }, 'client'],
  ['the JavaScript key', { applicationId: KEYS.appId, javascriptKey: KEYS.javascriptKey }, 'client'],
  ['the master key', { applicationId: KEYS.appId, masterKey: KEYS.masterKey }, 'master'],
  [
    'the master key beside a wrong client key',
    { applicationId: KEYS.appId, masterKey: KEYS.masterKey, restAPIKey: 'wrong' },
    'master',
  ],
  [
    'a wrong master key beside the right client key',
    { applicationId: KEYS.appId, masterKey: 'wrong', restAPIKey: KEYS.restAPIKey },
    'refused',
  ],
  ['a wrong application id', { applicationId: 'other', restAPIKey: KEYS.restAPIKey }, 'refused'],
  ['no application id', { restAPIKey: KEYS.restAPIKey }, 'refused'],
  ['no key while keys are configured', { applicationId: KEYS.appId }, 'refused'],
  ['a wrong REST key', { applicationId: KEYS.appId, restAPIKey: 'wrong' }, 'refused'],
  [
    'one right and one wrong client key',
    { applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey, javascriptKey: 'wrong' },
    'client',
  ],
  ['a client key the service does not configure', { applicationId: KEYS.appId, clientKey: 'any' }, 'refused'],
];

async function restAuthority(keys: Keys): Promise<'master' | 'client' | 'refused'> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(keys)) headers[HEADER[name as keyof Keys]] = value;
  // GET /schemas needs the master key: 200 is master, 401 "master key is required" a client.
  const res = await fetch(`${t.url}/schemas`, { headers });
  const body = (await res.json()) as { error?: string };
  if (res.status === 200) return 'master';
  if (body.error === 'unauthorized: master key is required') return 'client';
  expect([res.status, body]).toEqual([403, { code: 119, error: 'unauthorized' }]);
  return 'refused';
}

async function liveAuthority(keys: Keys): Promise<'master' | 'client' | 'refused'> {
  const c = await LiveClient.open(t);
  try {
    c.send({ op: 'connect', ...keys });
    const frame = await c.take();
    if (frame.op === 'error') {
      expect(frame).toEqual({ op: 'error', code: 119, error: 'unauthorized', reconnect: false });
      return 'refused';
    }
    expect(frame.op).toBe('connected');
    // _Session is open to realtime for the master key only (LiveText.sessionClass otherwise).
    c.send({ op: 'subscribe', requestId: 1, query: { className: '_Session', where: {} } });
    const answer = await c.take();
    return answer.op === 'subscribed' ? 'master' : 'client';
  } finally {
    c.close();
  }
}

describe('one check of keys for REST and realtime', () => {
  it.each(CASES)('%s', async (_name, keys, expected) => {
    expect(await restAuthority(keys)).toBe(expected);
    expect(await liveAuthority(keys)).toBe(expected);
  });
});
