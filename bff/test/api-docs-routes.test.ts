import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, KEYS, type StartedBff, startBff } from './helpers/bff.ts';

/**
 * The console's API tab reads the service's API document through the bff
 * (GET /bff/apps/<app>/openapi.json): as master (every class), or `?as=anonymous` with the
 * application keys only. Every console user reads it; no key is in it. Real service, real bff.
 */

let t: StartedBff;
let admin: BffFetch;
let viewer: BffFetch;
const A = '/bff/apps/test-app';

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
  viewer = await t.login('viewer');
  for (const [className, clp] of [
    ['Open', undefined],
    ['Closed', { find: {}, get: {}, count: {}, create: {}, update: {}, delete: {}, addField: {} }],
  ] as const) {
    const res = await t.service.request('POST', `/schemas/${className}`, {
      as: 'master',
      body: {
        className,
        fields: { title: { type: 'String' } },
        ...(clp ? { classLevelPermissions: clp } : {}),
      },
    });
    expect(res.status, res.text).toBe(200);
  }
});

afterAll(async () => {
  await t?.close();
});

const classPaths = (doc: { paths: Record<string, unknown> }) =>
  Object.keys(doc.paths).filter((p) => p.startsWith('/classes/'));

describe('GET /bff/apps/<app>/openapi.json', () => {
  it('answers the master document to every console user, with every class and no key', async () => {
    for (const user of [admin, viewer]) {
      const res = await user.get(`${A}/openapi.json`);
      expect(res.status).toBe(200);
      expect(res.json.openapi).toBe('3.1.0');
      expect(classPaths(res.json)).toEqual([
        '/classes/Closed',
        '/classes/Closed/{objectId}',
        '/classes/Open',
        '/classes/Open/{objectId}',
      ]);
      expect(res.text).not.toContain(KEYS.masterKey);
      expect(res.text).not.toContain(KEYS.restAPIKey);
    }
  });

  it('answers the public document with ?as=anonymous: the closed class is not named', async () => {
    const res = await admin.get(`${A}/openapi.json?as=anonymous`);
    expect(res.status).toBe(200);
    expect(classPaths(res.json)).toEqual(['/classes/Open', '/classes/Open/{objectId}']);
    expect(res.text).not.toContain('Closed');
  });

  it('refuses another viewpoint with the code and text of a bad query', async () => {
    const res = await admin.get(`${A}/openapi.json?as=user`);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 107,
      error: 'Invalid API document query: as: Invalid option: expected one of "master"|"anonymous"',
    });
  });
});
