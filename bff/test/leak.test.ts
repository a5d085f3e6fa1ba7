import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BffFetch, findLeaks, KEYS, type StartedBff, startBff, WEBHOOK_KEY } from './helpers/bff.ts';

/**
 * Key-leak scan: drive the routes with requests that try to get a key value into an answer
 * (rows, config, the API console, errors, audit entries) and scan every response and log line.
 */

let t: StartedBff;
let admin: BffFetch;
const A = '/bff/apps/test-app';

beforeAll(async () => {
  t = await startBff();
  admin = await t.login('admin');
});
afterAll(async () => {
  await t?.close();
});

describe('no key leaves the bff', () => {
  it('a key value stored in data comes back redacted everywhere', async () => {
    const res = await admin.post(`${A}/classes/Leaky`, {
      note: `the key is ${KEYS.masterKey}`,
      rest: KEYS.restAPIKey,
    });
    expect(res.status).toBe(201);
    const id = res.json.objectId;
    const got = await admin.get(`${A}/classes/Leaky/${id}`);
    expect(got.json.note).toBe('the key is [FILTERED]');
    await admin.get(
      `${A}/classes/Leaky?where=${encodeURIComponent(JSON.stringify({ rest: KEYS.restAPIKey }))}`,
    );
    await admin.put(`${A}/classes/Leaky/${id}`, { hook: WEBHOOK_KEY });
    await admin.put(`${A}/config`, { params: { k: KEYS.masterKey, j: KEYS.javascriptKey } });
    await admin.get(`${A}/config`);
    await admin.post(`${A}/console`, { method: 'GET', path: '/serverInfo' });
    await admin.post(`${A}/console`, { method: 'GET', path: `/classes/Leaky/${id}` });
    await admin.post(`${A}/console`, { method: 'POST', path: '/classes/Leaky', body: { m: KEYS.masterKey } });
    await admin.post(`${A}/console`, { method: 'GET', path: `/classes/${KEYS.masterKey}` });
    await admin.post(`${A}/console`, { method: 'GET', path: '/schemas' });
    await admin.post(`${A}/classes/Leaky/bulk/update`, {
      objectIds: [id],
      field: 'x',
      value: KEYS.masterKey,
    });
    const audit = await admin.get('/bff/audit?limit=1000');
    expect(audit.json.results.length).toBeGreaterThan(3);
    expect(audit.text).toContain('[FILTERED]');
  });

  it('errors that echo input do not carry a key', async () => {
    await admin.get(`${A}/classes/Leaky/${KEYS.masterKey.slice(0, 20)}`);
    await admin.post(`${A}/schemas`, { className: KEYS.masterKey });
    await admin.get(`${A}/schemas/${encodeURIComponent(KEYS.masterKey)}`);
    await admin.post(`${A}/console`, { method: 'GET', path: `http://x/${KEYS.masterKey}` });
    await admin.get(`/bff/apps/${KEYS.masterKey}/schemas`);
    await admin.get(`${A}/classes/Leaky?where=${encodeURIComponent(`{"${KEYS.masterKey}":{"$bad":1}}`)}`);
    const last = t.responses.at(-1)!;
    expect(last.status).toBe(400);
  });

  it('the audit file stores no key either', () => {
    const entries = t.bff.ctx.audit.list({ limit: 1000 });
    const text = JSON.stringify(entries);
    for (const s of t.secrets) expect(text).not.toContain(s);
  });

  it('scan: every response and log line of this suite', () => {
    expect(t.responses.length).toBeGreaterThan(15);
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
    for (const line of t.logs) for (const s of t.secrets) expect(line).not.toContain(s);
  });
});
