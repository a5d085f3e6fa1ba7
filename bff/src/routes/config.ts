import { CONFIG_PARAMETER_NAME_PATTERN } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, bodyOf, parse, unwrap } from './http.ts';

const paramName = z.string().regex(CONFIG_PARAMETER_NAME_PATTERN, 'must be a parameter name');
const configBody = z.strictObject({
  params: z.record(paramName, z.unknown()),
  masterKeyOnly: z.record(paramName, z.boolean()).optional(),
});

type ConfigDoc = { params: Record<string, unknown>; masterKeyOnly?: Record<string, boolean> };

/** Config parameters: get, update (values, `{__op: 'Delete'}` and masterKeyOnly flags). */
export function registerConfigRoutes(router: express.Router, ctx: BffContext): void {
  const path = '/apps/:appId/config';
  const read = async (s: { client: import('@bds/client').Client }): Promise<ConfigDoc> => {
    const doc = unwrap(await s.client.request<ConfigDoc>('GET', '/config', { useMasterKey: true }));
    return { params: doc.params ?? {}, masterKeyOnly: doc.masterKeyOnly ?? {} };
  };

  router.get(
    path,
    appRoute(ctx, {}, async (s) => read(s)),
  );

  router.put(
    path,
    appRoute(ctx, { write: true }, async (s) => {
      const body = parse(configBody, bodyOf(s.req), 'config');
      const before = await read(s);
      unwrap(await s.client.request('PUT', '/config', { useMasterKey: true, body }));
      const after = await read(s);
      s.audit('config.update', 'config', before, after);
      return after;
    }),
  );
}
