import type { Data } from '../../data/data.ts';
import type { Caller } from '../../kernel/caller.ts';
import { openApiDocument } from '../openapi.ts';
import type { Router } from '../router.ts';
import { SERVER_VERSION } from './misc.ts';
import { listedSchemas } from './schemas.ts';

/**
 * `GET /openapi.json` (any caller with application keys): the REST API as this caller may use it
 * (docs/protocol.md#openapi). The classes are those the schema API lists; the cloud functions those
 * the module and the function webhooks registered that this caller passes the rules of.
 */
export function registerOpenApiRoute(
  router: Router,
  data: Data,
  functions: (caller: Caller) => string[],
  publicUrl: () => string,
): void {
  router.add('GET', '/openapi.json', async (req) => ({
    body: openApiDocument({
      caller: req.ctx.caller,
      schemas: await listedSchemas(data),
      functions: functions(req.ctx.caller),
      serverUrl: publicUrl(),
      version: SERVER_VERSION,
    }),
  }));
}
