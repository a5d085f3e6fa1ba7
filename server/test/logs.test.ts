import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WriteEvent } from '../src/kernel/events.ts';
import { TRACE_ID_LENGTH } from '../src/kernel/trace.ts';
import { startService, type TestService } from './helpers/service.ts';

/** Request ids (X-Request-Id) and the logs explorer (docs/protocol.md#request-ids). */

const GENERATED = new RegExp(`^[A-Za-z0-9]{${TRACE_ID_LENGTH}}$`);

describe('request id: X-Request-Id on every answer', () => {
  let plain: TestService;
  let proxied: TestService;

  beforeAll(async () => {
    plain = await startService();
    // The test's requests come from 127.0.0.1: a trusted proxy for this one.
    proxied = await startService({ trustProxy: ['loopback'] });
  });
  afterAll(async () => {
    await plain?.close();
    await proxied?.close();
  });

  it('a new id on each answer: success, error, health, preflight', async () => {
    const ok = await plain.request('GET', '/classes/Thing');
    const missing = await plain.request('GET', '/classes/Thing/nope');
    const health = await plain.request('GET', '/health', { as: 'none' });
    const preflight = await fetch(`${plain.url}/classes/Thing`, { method: 'OPTIONS' });
    const ids = [ok, missing, health].map((r) => r.headers.get('X-Request-Id'));
    ids.push(preflight.headers.get('X-Request-Id'));
    expect(ok.status).toBe(200);
    expect(missing.status).toBe(404);
    for (const id of ids) expect(id).toMatch(GENERATED);
    expect(new Set(ids).size).toBe(4);
    expect(ok.headers.get('Access-Control-Expose-Headers')).toContain('X-Request-Id');
  });

  it("a client that is not a trusted proxy cannot choose its request's id", async () => {
    const res = await plain.request('GET', '/classes/Thing', {
      headers: { 'X-Request-Id': 'chosen-by-client' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('X-Request-Id')).toMatch(GENERATED);
  });

  it("a trusted proxy's id is kept when it is safe, replaced otherwise", async () => {
    const kept = await proxied.request('GET', '/classes/Thing', {
      headers: { 'X-Request-Id': 'edge-4f2a:01.b_c' },
    });
    expect(kept.headers.get('X-Request-Id')).toBe('edge-4f2a:01.b_c');
    for (const bad of ['with space', 'quote"d', 'x'.repeat(129), '<script>', 'a,b']) {
      const res = await proxied.request('GET', '/classes/Thing', { headers: { 'X-Request-Id': bad } });
      expect(res.status).toBe(200);
      expect(res.headers.get('X-Request-Id')).toMatch(GENERATED);
    }
    const longest = 'y'.repeat(128);
    const bounded = await proxied.request('GET', '/classes/Thing', { headers: { 'X-Request-Id': longest } });
    expect(bounded.headers.get('X-Request-Id')).toBe(longest);
  });

  it("the write event carries the request's id (row history records it)", async () => {
    const events: WriteEvent[] = [];
    const off = proxied.service.core.events.subscribe((e) => events.push(e));
    const res = await proxied.request('POST', '/classes/Traced', {
      as: 'master',
      body: { n: 1 },
      headers: { 'X-Request-Id': 'trace-write-1' },
    });
    off();
    expect(res.status).toBe(201);
    const created = events.find((e) => e.className === 'Traced' && e.op === 'create');
    expect(created?.requestId).toBe('trace-write-1');
  });
});
