import { isObject } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, hideCredentials, maskToken, parse, unwrap } from './http.ts';
import { findQuery, objectId } from './schemas-edge.ts';

/**
 * The Security section's people views: users (searched, with what the console needs to know of
 * their credentials without seeing them) and installations (filtered; the one installations list,
 * shown by Security and by Push). Roles live in roles.ts, user writes and sessions in users.ts.
 */

const page = findQuery.pick({ limit: true, skip: true });
const usersQuery = page.extend({ search: z.string().trim().max(200).optional() });
const installationsQuery = page.extend({
  deviceType: z.string().max(50).optional(),
  channel: z.string().max(200).optional(),
  user: objectId.optional(),
  /** The owner's username (the service stores usernames lowercased). */
  username: z.string().trim().toLowerCase().max(200).optional(),
  installationId: z.string().max(200).optional(),
});

/** `text` as a regular expression that matches it literally. */
const literal = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

/**
 * A user row as the console shows it: credentials hidden, with `anonymous` (an anonymous
 * sign-up: authData holds an `anonymous` entry) and `mfa` (an enrolled second factor, reported by
 * the service as `authData.mfa.status`) derived before authData is hidden.
 */
function presentUser(row: Record<string, unknown>) {
  const authData = isObject(row.authData) ? row.authData : {};
  const mfa = isObject(authData.mfa) && authData.mfa.status === 'enabled';
  const { authData: _hidden, ...rest } = row;
  return { ...hideCredentials(rest), anonymous: isObject(authData.anonymous), mfa };
}

/** Shows a push token's start only: enough to tell devices apart, not to push to them. */
export function registerPeopleRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/people';

  // Users by username or email (both stored lowercased by the service), newest first.
  router.get(
    `${base}/users`,
    appRoute(ctx, {}, async (s) => {
      const q = parse(usersQuery, s.req.query, 'users query');
      const needle = q.search ? literal(q.search.toLowerCase()) : '';
      const where = needle ? { $or: [{ username: { $regex: needle } }, { email: { $regex: needle } }] } : {};
      const res = unwrap(
        await s.client.find<Record<string, unknown>>(
          '_User',
          { where, order: '-createdAt', limit: q.limit ?? 100, skip: q.skip, count: true },
          { useMasterKey: true },
        ),
      );
      return { results: res.results.map(presentUser), count: res.count };
    }),
  );

  router.get(
    `${base}/installations`,
    appRoute(ctx, {}, async (s) => {
      const q = parse(installationsQuery, s.req.query, 'installations query');
      const where: Record<string, unknown> = {};
      if (q.deviceType) where.deviceType = q.deviceType;
      if (q.channel) where.channels = q.channel;
      if (q.installationId) where.installationId = q.installationId;
      let userId = q.user;
      if (q.username) {
        const owner = unwrap(
          await s.client.find<{ objectId: string }>(
            '_User',
            { where: { username: q.username }, limit: 1, keys: 'objectId' },
            { useMasterKey: true },
          ),
        ).results[0];
        if (!owner || (userId && userId !== owner.objectId)) return { results: [], count: 0 };
        userId = owner.objectId;
      }
      if (userId) where.user = { __type: 'Pointer', className: '_User', objectId: userId };
      const res = unwrap(
        await s.client.find<Record<string, unknown>>(
          '_Installation',
          {
            where,
            order: '-createdAt',
            limit: q.limit ?? 100,
            skip: q.skip,
            count: true,
            include: 'user',
          },
          { useMasterKey: true },
        ),
      );
      return {
        results: res.results.map((r) => {
          const user = isObject(r.user) ? { objectId: r.user.objectId, username: r.user.username } : null;
          return { ...r, deviceToken: maskToken(r.deviceToken), user };
        }),
        count: res.count,
      };
    }),
  );
}
