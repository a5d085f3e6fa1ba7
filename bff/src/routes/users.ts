import { ErrorCode } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { appRoute, BffError, bodyOf, hideCredentials, parse, unwrap } from './http.ts';
import { idOf, readRow, refuseCredentialChange } from './rows.ts';
import { findQuery, jsonObject, objectId } from './schemas-edge.ts';

const createUserBody = z.looseObject({
  username: z.string().min(1).max(200),
  password: z.string().min(1).max(1000),
  email: z.email().optional(),
});
const sessionsQuery = findQuery.extend({ user: objectId.optional() });
const passwordBody = z.strictObject({ password: z.string().min(1).max(1000) });

/** Users (list, get, create, update, delete) and sessions (list, revoke). */
export function registerUserRoutes(router: express.Router, ctx: BffContext): void {
  const users = '/apps/:appId/users';
  const sessions = '/apps/:appId/sessions';

  router.get(
    users,
    appRoute(ctx, {}, async (s) => {
      const q = parse(findQuery, s.req.query, 'query');
      return hideCredentials(unwrap(await s.client.find('_User', q, { useMasterKey: true })));
    }),
  );

  router.get(
    `${users}/:objectId`,
    appRoute(ctx, {}, async (s) =>
      hideCredentials(unwrap(await s.client.get('_User', idOf(s), { useMasterKey: true }))),
    ),
  );

  router.post(
    users,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const fields: Record<string, unknown> = parse(createUserBody, bodyOf(s.req), 'user');
      const created = unwrap(
        await s.client.create<Record<string, unknown>>('_User', fields, { useMasterKey: true }),
      );
      const id = String(created.objectId);
      s.audit('user.create', `_User/${id}`, null, await readRow(s.client, '_User', id));
      // Creating a user signs it up; the console does not keep (or show) that session.
      const token = created.sessionToken;
      if (typeof token === 'string') {
        const found = await s.client.find<{ objectId: string }>(
          '_Session',
          { where: { sessionToken: token }, limit: 1, keys: 'objectId' },
          { useMasterKey: true },
        );
        if (found.success && found.data.results[0]) {
          await s.client.destroy('_Session', found.data.results[0].objectId, { useMasterKey: true });
        }
      }
      const { sessionToken: _dropped, ...rest } = created;
      return hideCredentials(rest);
    }),
  );

  router.put(
    `${users}/:objectId`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = idOf(s);
      const fields = parse(jsonObject, bodyOf(s.req), 'user changes');
      refuseCredentialChange('_User', Object.keys(fields));
      const before = await readRow(s.client, '_User', id);
      const result = unwrap(await s.client.update('_User', id, fields, { useMasterKey: true }));
      s.audit('user.update', `_User/${id}`, before, await readRow(s.client, '_User', id));
      return hideCredentials(result);
    }),
  );

  // The one way the console sets a password (the console asks for a confirmation first). The
  // service ends the user's sessions; the audit says what happened, never the value.
  router.put(
    `${users}/:objectId/password`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = idOf(s);
      const { password } = parse(passwordBody, bodyOf(s.req), 'password');
      const result = unwrap(
        await s.client.update<{ updatedAt?: string }>('_User', id, { password }, { useMasterKey: true }),
      );
      s.audit('user.password', `_User/${id}`, null, { change: 'password changed' });
      return { updatedAt: result.updatedAt };
    }),
  );

  // Sends the user the service's own password reset mail (POST /requestPasswordReset).
  router.post(
    `${users}/:objectId/password-reset`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = idOf(s);
      const user = unwrap(
        await s.client.get<{ username?: string; email?: unknown }>('_User', id, { useMasterKey: true }),
      );
      if (typeof user.email !== 'string' || user.email === '') {
        throw new BffError(
          400,
          ErrorCode.EMAIL_MISSING,
          `User ${user.username ?? id} has no email address to send a reset mail to.`,
        );
      }
      unwrap(await s.client.request('POST', '/requestPasswordReset', { body: { email: user.email } }));
      s.audit('user.passwordReset', `_User/${id}`, null, { email: user.email });
      return { sentTo: user.email };
    }),
  );

  router.delete(
    `${users}/:objectId`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = idOf(s);
      const before = await readRow(s.client, '_User', id);
      unwrap(await s.client.destroy('_User', id, { useMasterKey: true }));
      s.audit('user.delete', `_User/${id}`, before, null);
      return {};
    }),
  );

  router.get(
    sessions,
    appRoute(ctx, {}, async (s) => {
      const { user, ...q } = parse(sessionsQuery, s.req.query, 'query');
      const where = user
        ? { ...q.where, user: { __type: 'Pointer', className: '_User', objectId: user } }
        : q.where;
      const res = await s.client.find(
        '_Session',
        { order: '-createdAt', ...q, where },
        { useMasterKey: true },
      );
      return hideCredentials(unwrap(res));
    }),
  );

  router.delete(
    `${sessions}/:objectId`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = idOf(s);
      const before = await readRow(s.client, '_Session', id);
      unwrap(await s.client.destroy('_Session', id, { useMasterKey: true }));
      s.audit('session.revoke', `_Session/${id}`, before, null);
      return {};
    }),
  );
}
