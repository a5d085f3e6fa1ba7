import ParseSDK from 'parse/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, startService, type TestService } from '../helpers/service.ts';

/**
 * The service's options through the stock `parse` SDK (v8) unchanged: its REST controller sends
 * every call as a `text/plain` POST with `_method` and the keys in the body, as a browser app or
 * an admin tool built on the SDK would. The master key reads the options without a secret; the
 * JavaScript key and a user's session are refused with the incumbent's code for a master-only
 * surface.
 */

// The package's "./node" entry exports the Parse object; its typings leave out initialize(), which on
// Node also takes the master key.
const Parse = ParseSDK as typeof ParseSDK & {
  initialize(applicationId: string, javaScriptKey: string, masterKey?: string): void;
};

interface RestController {
  request(method: string, path: string, data?: unknown, options?: Record<string, unknown>): Promise<any>;
}
const rest = () => Parse.CoreManager.getRESTController() as unknown as RestController;

let t: TestService;

beforeAll(async () => {
  t = await startService({
    webhookKey: 'sdk-webhook-key-3c4d5e6f',
    allowCustomObjectId: true,
    trustProxy: 2,
  });
  Parse.initialize(KEYS.appId, KEYS.javascriptKey, KEYS.masterKey);
  Parse.serverURL = t.url;
  Parse.CoreManager.set('REQUEST_ATTEMPT_LIMIT', 1);
});

afterAll(async () => {
  await t?.close();
});

describe('GET serverInfo/options through the SDK', () => {
  it('the master key reads the effective options and no key', async () => {
    const view = await rest().request('GET', 'serverInfo/options', {}, { useMasterKey: true });
    const rows = view.groups.flatMap((g: { options: unknown[] }) => g.options);
    const row = (name: string) => rows.find((r: { name: string }) => r.name === name);
    expect(row('allowCustomObjectId')).toMatchObject({ set: true, value: true });
    expect(row('trustProxy')).toMatchObject({ set: true, value: 2 });
    expect(row('masterKey')).toMatchObject({ set: true, hidden: true });
    expect(row('webhookKey')).toMatchObject({ set: true, hidden: true });
    const text = JSON.stringify(view);
    for (const secret of [KEYS.masterKey, KEYS.restAPIKey, KEYS.javascriptKey, 'sdk-webhook-key-3c4d5e6f'])
      expect(text).not.toContain(secret);
  });

  it('the JavaScript key and a user are refused with 119', async () => {
    await expect(
      rest().request('GET', 'serverInfo/options', {}, { useMasterKey: false }),
    ).rejects.toMatchObject({
      code: 119,
      message: 'unauthorized: master key is required',
    });
    const user = await Parse.User.signUp('sdk-ann', 'sdk-ann-pw', {});
    await expect(
      rest().request(
        'GET',
        'serverInfo/options',
        {},
        { useMasterKey: false, sessionToken: user.getSessionToken() },
      ),
    ).rejects.toMatchObject({ code: 119, message: 'unauthorized: master key is required' });
    await Parse.User.logOut();
  });
});
