import type { Records } from '../../data/records.ts';
import type { Router } from '../router.ts';

const ALIASES: Array<[string, string]> = [
  ['users', '_User'],
  ['roles', '_Role'],
  ['installations', '_Installation'],
  ['sessions', '_Session'],
];

/** /classes/<C>[/<id>] and the built-in aliases (/users, /roles, ...). */
export function registerClassRoutes(router: Router, records: Records, publicUrl: () => string): void {
  const routesFor = (prefix: string, classOf: (params: Record<string, string>) => string) => {
    router.add('GET', `${prefix}`, async (req) => ({
      body: await records.find(req.auth, classOf(req.params), req.query),
    }));
    router.add('POST', `${prefix}`, async (req) => {
      const className = classOf(req.params);
      const created = await records.create(req.auth, className, req.body);
      const location = `${publicUrl()}${prefix.replace(':className', encodeURIComponent(className))}/${created.objectId}`;
      return { status: 201, body: created, headers: { Location: location } };
    });
    router.add('GET', `${prefix}/:objectId`, async (req) => ({
      body: await records.get(req.auth, classOf(req.params), req.params.objectId!, req.query),
    }));
    router.add('PUT', `${prefix}/:objectId`, async (req) => ({
      body: await records.update(req.auth, classOf(req.params), req.params.objectId!, req.body),
    }));
    router.add('DELETE', `${prefix}/:objectId`, async (req) => {
      await records.delete(req.auth, classOf(req.params), req.params.objectId!);
      return { body: {} };
    });
  };
  routesFor('/classes/:className', (params) => params.className!);
  for (const [alias, className] of ALIASES) routesFor(`/${alias}`, () => className);
}
