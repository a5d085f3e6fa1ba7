import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, BffError, bodyOf, Code, param, parse } from './http.ts';
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
const filterId = z
  .string()
  .regex(/^\d{1,15}$/, 'must be a saved filter id')
  .transform(Number);

/** Saved filters of the data browser, per class, shared by the app's console users. */
export function registerFilterRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/classes/:className/filters';

  router.get(
    base,
    appRoute(ctx, {}, async (s) => ({ results: ctx.filters.list(s.appId, classOf(s)) })),
  );

  router.post(
    base,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const { name, where } = parse(saveBody, bodyOf(s.req), 'saved filter');
      return ctx.filters.save(s.appId, cls, s.user.username, name, where);
    }),
  );

  router.delete(
    `${base}/:filterId`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const id = parse(filterId, param(s.req, 'filterId'), 'saved filter id');
      const found = ctx.filters.get(s.appId, id);
      if (!found || found.className !== cls)
        throw new BffError(404, Code.OBJECT_NOT_FOUND, `No saved filter ${id} on ${cls}.`);
      if (found.owner !== s.user.username)
        throw new BffError(
          403,
          Code.FORBIDDEN,
          `Only ${found.owner}, who saved the filter "${found.name}", may delete it.`,
        );
      ctx.filters.delete(id);
      return {};
    }),
  );
}
