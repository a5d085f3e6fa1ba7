import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from './helpers/service.ts';

/** A dry run (POST /security/evaluate) rolls back: the mails its write would have sent are not sent. */
describe('dry runs send no mail', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ verifyUserEmails: true });
  });
  afterAll(() => t?.close());

  const mailbox = async () =>
    (await t.request('GET', '/devMailbox', { as: 'master' })).json.results as unknown[];

  it('a dry-run sign-up with an email sends no verification mail; the real one does', async () => {
    const dry = { username: 'dry', password: 'pw-dry-run-1', email: 'dry@example.com' };
    const res = await t.request('POST', '/security/evaluate', {
      as: 'master',
      body: { viewpoint: { kind: 'anonymous' }, method: 'POST', path: '/users', body: dry },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 201, dryRun: true });
    const users = await t.request('GET', '/users', { as: 'master', query: { count: 1, limit: 0 } });
    expect(users.json.count).toBe(0);

    // The real sign-up's mail starts after the dry run's would have: once it is in, the other would be too.
    const real = await t.request('POST', '/users', {
      body: { ...dry, username: 'wet', email: 'wet@example.com' },
    });
    expect(real.status).toBe(201);
    await expect.poll(async () => (await mailbox()).length, { timeout: 15_000 }).toBeGreaterThan(0);
    const to = (await mailbox()).map((m) => JSON.stringify(m));
    expect(to).toHaveLength(1);
    expect(to[0]).toContain('wet@example.com');
    expect(to[0]).not.toContain('dry@example.com');
  });
});
