import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CONSOLE_USER_HEADER } from '@bds/client/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asConsoleUser, consoleCallerFetch } from '../src/console-caller.ts';
import { type BffFetch, KEYS, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * Every call the bff makes to the service with the master key names the console user it makes it
 * for (`X-BDS-Console-User`), so the service records the console's writes under that name. The
 * "service" here is a recorder of the headers it gets (besides the real one the helper starts).
 */

let t: StartedBff;
let recorder: Server;
let recorderUrl = '';
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  recorder = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ results: [] }));
  });
  await new Promise<void>((r) => recorder.listen(0, '127.0.0.1', () => r()));
  recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  const app = (id: string, serverURL: string) => ({
    id,
    name: id,
    serverURL,
    appId: KEYS.appId,
    masterKey: KEYS.masterKey,
    restAPIKey: KEYS.restAPIKey,
    javascriptKey: KEYS.javascriptKey,
  });
  t = await startBff({ options: { apps: [app('recorded', recorderUrl)] } });
});

afterAll(async () => {
  await t?.close();
  await new Promise((r) => recorder?.close(r));
});

const header = CONSOLE_USER_HEADER.toLowerCase();

describe('the console user on service calls', () => {
  it('names the console user on each master-key call of a request', async () => {
    for (const username of ['admin', 'viewer']) {
      const user: BffFetch = await t.login(username);
      seen.length = 0;
      const res = await user.get('/bff/apps/recorded/classes/Thing');
      expect(res.status, res.text).toBe(200);
      expect(seen).toHaveLength(1);
      expect(seen[0]!['x-backend-master-key']).toBe(KEYS.masterKey);
      expect(seen[0]![header]).toBe(username);
    }
  });

  it('a call without the master key, or outside a console request, carries no name', async () => {
    seen.length = 0;
    await asConsoleUser('admin', () =>
      consoleCallerFetch(`${recorderUrl}/users/me`, { headers: { 'X-Backend-Session-Token': 'r:x' } }),
    );
    await consoleCallerFetch(`${recorderUrl}/classes/Thing`, {
      headers: { 'X-Backend-Master-Key': KEYS.masterKey },
    });
    expect(seen).toHaveLength(2);
    expect(seen.map((h) => h[header])).toEqual([undefined, undefined]);
  });
});
