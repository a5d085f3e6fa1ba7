import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePush, startFakePush } from '../../server/test/helpers/fake-push.ts';
import { type StartedBff, startBff, TEST_PASSWORD } from './helpers/bff.ts';

/** The Push section says whether the service can send when it opens (not after a send). */
const APP = '/bff/apps/test-app';
let fake: FakePush;
let on: StartedBff;
let off: StartedBff;

beforeAll(async () => {
  fake = await startFakePush();
  on = await startBff({ service: { push: fake.options } });
  off = await startBff();
});
afterAll(async () => {
  await on?.close();
  await off?.close();
  await fake?.close();
});

describe('GET /bff/apps/:appId/push/setup', () => {
  it('answers configured: false without the push option, and true with it, to read-only users too', async () => {
    const viewerOff = await off.login('viewer', TEST_PASSWORD);
    expect(await viewerOff.get(`${APP}/push/setup`)).toMatchObject({
      status: 200,
      json: { configured: false },
    });
    const viewerOn = await on.login('viewer', TEST_PASSWORD);
    expect(await viewerOn.get(`${APP}/push/setup`)).toMatchObject({
      status: 200,
      json: { configured: true },
    });
  });

  it('needs a console session', async () => {
    const res = await off.anonymous().get(`${APP}/push/setup`);
    expect(res).toMatchObject({ status: 401, json: { code: 119, error: 'Not logged in.' } });
  });
});
