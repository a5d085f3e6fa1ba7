import { describe, expect, it } from 'vitest';
import { expandDottedKeys, OptionError, validateOptions } from '../src/config/options.ts';

const BASE = { appId: 'app', masterKey: 'master-key-123' };

describe('options', () => {
  it('applies the documented defaults', () => {
    const o = validateOptions(BASE);
    expect(o).toMatchObject({
      port: 1337,
      mountPath: '/api',
      dataDir: './data',
      maxLimit: 1000,
      maxUploadSize: 20 * 1024 * 1024,
      allowClientClassCreation: false,
      protectedFieldsOwnerExempt: false,
      protectedFieldsSaveResponseExempt: false,
      requestComplexity: {
        includeDepth: 10,
        includeCount: 100,
        subqueryDepth: 10,
        queryDepth: 10,
        batchRequestLimit: 100,
      },
      fileUpload: { enableForPublic: false },
    });
  });

  it('takes dotted keys and nested objects alike', () => {
    expect(
      expandDottedKeys({ 'requestComplexity.includeDepth': 3, requestComplexity: { queryDepth: 4 } }),
    ).toEqual({
      requestComplexity: { includeDepth: 3, queryDepth: 4 },
    });
    const o = validateOptions({
      ...BASE,
      'requestComplexity.includeDepth': -1,
      'fileUpload.enableForPublic': true,
    });
    expect(o.requestComplexity.includeDepth).toBe(-1);
    expect(o.requestComplexity.batchRequestLimit).toBe(100);
    expect(o.fileUpload.enableForPublic).toBe(true);
  });

  it('reads sizes such as "1mb"', () => {
    expect(validateOptions({ ...BASE, maxUploadSize: '1mb' }).maxUploadSize).toBe(1024 * 1024);
  });

  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['unknown option', { ...BASE, maxLimt: 5 }, 'maxLimt'],
    ['unknown nested option', { ...BASE, 'requestComplexity.depth': 5 }, 'requestComplexity.depth'],
    ['wrong type', { ...BASE, maxLimit: 'many' }, 'maxLimit'],
    ['limit below -1', { ...BASE, 'requestComplexity.includeDepth': -2 }, 'requestComplexity.includeDepth'],
    ['bad mount path', { ...BASE, mountPath: 'api' }, 'mountPath'],
    ['short master key', { ...BASE, masterKey: 'x' }, 'masterKey'],
    ['missing app id', { masterKey: 'master-key-123' }, 'appId'],
    ['bad size', { ...BASE, maxUploadSize: 'huge' }, 'maxUploadSize'],
    ['bad port', { ...BASE, port: 70000 }, 'port'],
  ];
  for (const [name, input, option] of bad) {
    it(`names the option: ${name}`, () => {
      let error: unknown;
      try {
        validateOptions(input);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(OptionError);
      expect((error as OptionError).option).toBe(option);
      expect((error as OptionError).message).toContain(option);
    });
  }
});
