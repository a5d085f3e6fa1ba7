import { ErrorCode } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, BffError, bodyOf, param, parse } from './http.ts';
import { classOf } from './rows.ts';
import { jsonObject } from './schemas-edge.ts';

/** Largest saved where clause, as JSON text. */
export const SAVED_FILTER_MAX_CHARS = 20_000;

const saveBody = z.strictObject({
  name: z.string().trim().min(1).max(100),
  where: jsonObject.refine((w) => JSON.stringify(w).length <= SAVED_FILTER_MAX_CHARS, {
    message: `must be at most ${SAVED_FILTER_MAX_CHARS} characters of JSON`,
  }),
});
const shareBody = z.strictObject({ shared: z.boolean() });
const filterId = z
  .string()
  .regex(/^\d{1,15}$/, 'must be a saved filter id')
  .transform(Number);

/**
 * Saved filters of the data browser, per class: each console user's own, and those their owners
 * shared with the app's console users.
 */
export function registerFilterRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/classes/:className/filters';

  router.get(
    base,
    appRoute(ctx, {}, async (s) => ({ results: ctx.filters.list(s.appId, classOf(s), s.user.username) })),
  );

  router.post(
    base,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const { name, where } = parse(saveBody, bodyOf(s.req), 'saved filter');
      return ctx.filters.save(s.appId, cls, s.user.username, name, where);
    }),
  );

  /** The filter `:filterId` of this class, which only its owner may change (`what` they tried). */
  const ownFilter = (s: AppScope, what: 'share' | 'delete') => {
    const cls = classOf(s);
    const id = parse(filterId, param(s.req, 'filterId'), 'saved filter id');
    const found = ctx.filters.get(s.appId, id);
    // Another user's unshared filter is not theirs to know of.
    if (!found || found.className !== cls || (found.owner !== s.user.username && !found.shared))
      throw new BffError(404, ErrorCode.OBJECT_NOT_FOUND, `No saved filter ${id} on ${cls}.`);
    if (found.owner !== s.user.username)
      throw new BffError(
        403,
        ErrorCode.OPERATION_FORBIDDEN,
        `Only ${found.owner}, who saved the filter "${found.name}", may ${what} it.`,
      );
    return found;
  };

  router.put(
    `${base}/:filterId`,
    appRoute(ctx, { write: true }, async (s) => {
      const found = ownFilter(s, 'share');
      const { shared } = parse(shareBody, bodyOf(s.req), 'saved filter');
      return ctx.filters.setShared(s.appId, found.id, shared);
    }),
  );

  router.delete(
    `${base}/:filterId`,
    appRoute(ctx, { write: true }, async (s) => {
      ctx.filters.delete(ownFilter(s, 'delete').id);
      return {};
    }),
  );
}
