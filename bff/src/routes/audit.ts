import { ErrorCode } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { AuditEntry, BffContext } from '../context.ts';
import { BffError, mayOpen, parse, plain } from './http.ts';

const isoTime = z
  .string()
  .refine((v) => !Number.isNaN(Date.parse(v)), 'must be a date/time (ISO 8601)')
  .transform((v) => new Date(v).toISOString());
const auditQuery = z.strictObject({
  app: z.string().min(1).max(200).optional(),
  user: z.string().min(1).max(200).optional(),
  action: z.string().min(1).max(200).optional(),
  target: z.string().min(1).max(2000).optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a positive integer')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .optional(),
  before: z.string().regex(/^\d+$/, 'must be an entry id').transform(Number).optional(),
});

/** GET /audit: the console's audit log, newest first, filtered, keyset-paged by id. Read-only. */
export function registerAuditRoutes(router: express.Router, ctx: BffContext): void {
  router.get(
    '/audit',
    plain(ctx, async ({ req, user }) => {
      const q = parse(auditQuery, req.query, 'audit query');
      if (q.app && !mayOpen(user, q.app)) {
        throw new BffError(
          403,
          ErrorCode.OPERATION_FORBIDDEN,
          `Console user ${user.username} may not open app ${q.app}.`,
        );
      }
      const limit = q.limit ?? 100;
      let results: AuditEntry[];
      if (user.apps === undefined || q.app) {
        results = ctx.audit.list({ ...q, limit });
      } else {
        // A user limited to some apps sees only their entries.
        results = user.apps
          .flatMap((app) => ctx.audit.list({ ...q, app, limit }))
          .sort((a, b) => b.id - a.id)
          .slice(0, limit);
      }
      const last = results.at(-1);
      return { results, next: results.length === limit && last ? last.id : null };
    }),
  );
}
