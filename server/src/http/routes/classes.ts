import type { Data } from '../../data/data.ts';
import type { Router } from '../router.ts';

const ALIASES: Array<[string, string]> = [
  ['users', '_User'],
  ['roles', '_Role'],
  ['installations', '_Installation'],
  ['sessions', '_Session'],
];

/** /classes/<C>[/<id>] and the built-in aliases (/users, /roles, ...). */
export function registerClassRoutes(router: Router, data: Data, publicUrl: () => string): void {
  const { reads, writes } = data;
  const routesFor = (prefix: string, classOf: (params: Record<string, string>) => string) => {
    router.add('GET', `${prefix}`, async (req) => ({
      body: await reads.find(req.ctx, classOf(req.params), req.query),
    }));
    router.add('POST', `${prefix}`, async (req) => {
      const className = classOf(req.params);
      const created = await writes.create(req.ctx, className, req.body);
      const location = `${publicUrl()}${prefix.replace(':className', encodeURIComponent(className))}/${created.objectId}`;
      return { status: 201, body: created, headers: { Location: location } };
    });
    router.add('GET', `${prefix}/:objectId`, async (req) => ({
      body: await reads.get(req.ctx, classOf(req.params), req.params.objectId!, req.query),
    }));
    router.add('PUT', `${prefix}/:objectId`, async (req) => ({
      body: await writes.update(req.ctx, classOf(req.params), req.params.objectId!, req.body),
    }));
    router.add('DELETE', `${prefix}/:objectId`, async (req) => {
      await writes.delete(req.ctx, classOf(req.params), req.params.objectId!);
      return { body: {} };
    });
  };
  routesFor('/classes/:className', (params) => params.className!);
  for (const [alias, className] of ALIASES) routesFor(`/${alias}`, () => className);
}
