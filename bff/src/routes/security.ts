import { ROLE_NAME_PATTERN } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, bodyOf, demand, hideCredentials, parse, unwrap } from './http.ts';
import { acl, className, jsonObject, objectId } from './schemas-edge.ts';

/**
 * The Security API (docs/security-api.md), proxied with the master key: explain, evaluate as a
 * viewpoint (reads as they are, writes as dry runs), a class's effective rules and the impact of a
 * permission draft. None of them changes anything, so read-only console users may call them (see
 * readOnlyGuard), evaluate with reads only and impact without role changes.
 */

/** The protocol's role name; the length cap is the bff's own bound on what it forwards. */
const roleName = z
  .string()
  .refine((name) => name.length <= 200 && ROLE_NAME_PATTERN.test(name), 'must be a role name');

export const viewpoint = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('user'), userId: objectId }),
  z.strictObject({ kind: z.literal('anonymous') }),
  z.strictObject({ kind: z.literal('roles'), roles: z.array(roleName).max(100) }),
]);

const explainBody = z.strictObject({
  operation: z.enum(['find', 'get', 'count', 'create', 'update', 'delete', 'addField']),
  className,
  objectId: objectId.optional(),
  body: jsonObject.optional(),
  viewpoint,
});

const evaluateBody = z.strictObject({
  viewpoint,
  method: z.enum(['GET', 'POST', 'PUT', 'DELETE']),
  path: z
    .string()
    .regex(
      /^\/(?:classes\/[^/]+|users|roles|installations|sessions)(?:\/[^/]+)?$/,
      'must be /classes/<C>[/<id>], /users, /roles, /installations or /sessions (with an optional /<id>)',
    ),
  query: jsonObject.optional(),
  body: z.unknown().optional(),
});

const classChange = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('acl'), objectIds: z.array(objectId).min(1).max(1000), ACL: acl }),
  z.strictObject({ kind: z.literal('clp'), classLevelPermissions: jsonObject }),
  z.strictObject({
    kind: z.literal('protectedFields'),
    protectedFields: z.record(z.string(), z.array(z.string())),
  }),
]);
const members = z.strictObject({
  add: z.array(objectId).max(1000).optional(),
  remove: z.array(objectId).max(1000).optional(),
});
/** A permission draft: changes of one class (`change`, or `changes` in order) and role changes. */
const impactBody = z.strictObject({
  className: className.optional(),
  change: classChange.optional(),
  changes: z.array(classChange).min(1).max(100).optional(),
  roles: z
    .array(z.strictObject({ roleId: objectId, users: members.optional(), roles: members.optional() }))
    .min(1)
    .max(100)
    .optional(),
});

const proxy = async (s: AppScope, path: string, body: unknown) =>
  // Session tokens and other credentials in rows (a dry run's before/after) never reach the browser.
  hideCredentials(unwrap(await s.client.request('POST', path, { useMasterKey: true, body })));

export function registerSecurityRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/security';
  router.post(
    `${base}/explain`,
    appRoute(ctx, {}, (s) =>
      proxy(s, '/security/explain', parse(explainBody, bodyOf(s.req), 'explain request')),
    ),
  );
  router.post(
    `${base}/evaluate`,
    appRoute(ctx, {}, (s) => {
      const request = parse(evaluateBody, bodyOf(s.req), 'evaluate request');
      // A dry run stores nothing, but its before-write triggers run (a webhook trigger calls out):
      // read-only console users evaluate reads only.
      if (request.method !== 'GET')
        demand(s.user, 'write', 'Read-only console users may evaluate reads (GET) only.');
      return proxy(s, '/security/evaluate', request);
    }),
  );
  router.post(
    `${base}/impact`,
    appRoute(ctx, {}, (s) => {
      const draft = parse(impactBody, bodyOf(s.req), 'impact request');
      // A role change is previewed by writing it in a transaction that rolls back, so the role's
      // before-save triggers run (a webhook trigger calls out): read-only users preview class changes only.
      if (draft.roles) demand(s.user, 'write', 'Read-only console users cannot preview role changes.');
      return proxy(s, '/security/impact', draft);
    }),
  );
  // A question, so a GET: read-only console users see the rules the service enforces too.
  router.get(
    `${base}/rules/:className`,
    appRoute(ctx, {}, (s) =>
      proxy(s, '/security/rules', { className: parse(className, s.req.params.className, 'class name') }),
    ),
  );
}
