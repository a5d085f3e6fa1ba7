import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findLeaks, type StartedBff, startBff } from './helpers/bff.ts';

let t: StartedBff;
beforeAll(async () => {
  t = await startBff();
});
afterAll(async () => {
  await t?.close();
});

describe('bff foundation', () => {
  it('logs in, answers the session and logs out', async () => {
    const admin = await t.login('admin');
    expect(admin.cookie).toMatch(/^bds_console=/);
    const s = await admin.get('/bff/session');
    expect(s.status).toBe(200);
    expect(s.json).toEqual({ user: { username: 'admin', role: 'admin' } });
    const out = await admin.post('/bff/logout');
    expect(out.status).toBe(200);
    expect(admin.cookie).toBe('');
    const after = await admin.get('/bff/session');
    expect(after.status).toBe(401);
  });

  it('no key in any response', () => {
    expect(findLeaks(t.responses, t.secrets)).toEqual([]);
  });
});
