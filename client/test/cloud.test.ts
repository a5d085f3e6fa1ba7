import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_MODULE } from '../../server/test/helpers/cloud.ts';
import { KEYS, startService, type TestService } from '../../server/test/helpers/service.ts';
import { AuthenticationError, CloudCodeError, createClient } from '../src/index.node.ts';

let svc: TestService;
const master = () =>
  createClient({
    serverURL: svc.url,
    applicationId: KEYS.appId,
    restAPIKey: KEYS.restAPIKey,
    masterKey: KEYS.masterKey,
  });
const plain = () =>
  createClient({ serverURL: svc.url, applicationId: KEYS.appId, restAPIKey: KEYS.restAPIKey });

beforeAll(async () => {
  svc = await startService({ cloud: CLOUD_MODULE });
});
afterAll(() => svc.close());

describe('cloud functions and jobs from the client library', () => {
  it('callFunction answers the result, or null on error', async () => {
    expect(await plain().callFunction('echo', { a: 1 })).toEqual({ a: 1 });
    expect(await plain().callFunction('fail')).toBeNull();
    expect(await plain().callFunction('nope')).toBeNull();
    // The older name does the same.
    expect(await plain().run('hello')).toBe('Hello stranger');
  });

  it('callFunctionOrThrow throws a CloudCodeError carrying the response', async () => {
    expect(await plain().callFunctionOrThrow('hello')).toBe('Hello stranger');
    const err = await plain()
      .callFunctionOrThrow('fail')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudCodeError);
    expect((err as CloudCodeError).message).toBe('it broke');
    expect((err as CloudCodeError).code).toBe(141);
    expect((err as CloudCodeError).response).toEqual({
      success: false,
      status: 400,
      code: 141,
      error: 'it broke',
    });
  });

  it('a function runs as the session user of the call', async () => {
    const signUp = await plain().signUp({ username: 'grace', password: 'pw' });
    expect(signUp.success).toBe(true);
    const token = signUp.success ? (signUp.data.sessionToken as string) : '';
    expect(await plain().callFunction('hello', {}, { sessionToken: token })).toBe('Hello grace');
  });

  it('runJob answers the status id; waitForJob polls until it is done', async () => {
    const id = await master().runJob('countNotes', { from: 'client' });
    expect(id).toMatch(/^[A-Za-z0-9]{10}$/);
    const status = await master().waitForJob(id, { intervalMs: 20, timeoutMs: 10_000 });
    expect(status).toMatchObject({
      objectId: id,
      jobName: 'countNotes',
      status: 'succeeded',
      message: '0 notes',
      params: { from: 'client' },
    });
    const failed = await master().waitForJob(await master().runJob('failingJob'), {
      intervalMs: 20,
      timeoutMs: 10_000,
    });
    expect(failed).toMatchObject({ status: 'failed', message: 'job broke' });
  });

  it('runJob throws for an unknown job (141) and without a session or master key (403)', async () => {
    const unknown = await master()
      .runJob('nope')
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(CloudCodeError);
    expect(unknown).toMatchObject({ code: 141, message: 'Invalid job.' });
    const anonymous = await plain()
      .runJob('countNotes')
      .catch((e: unknown) => e);
    expect(anonymous).toBeInstanceOf(AuthenticationError);
    expect(anonymous).toMatchObject({ code: 119, status: 403 });
  });
});
