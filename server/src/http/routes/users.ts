import { demandMaster } from '../../data/authorize.ts';
import type { Data } from '../../data/data.ts';
import type { Users } from '../../users/service.ts';
import { type ApiRequest, type Handler, type Method, ROUTE_PRECEDENCE, type Router } from '../router.ts';

/**
 * Users and sessions: sign-up (and sign-in with authData), login, verifyPassword, loginAs,
 * logout, the current user and session, user updates and deletes, session scoping, password reset
 * and verification requests. `/users`, `/classes/_User`, `/sessions` and `/classes/_Session` reach
 * these rules (batch sub-requests too) whatever the order routes are registered in: these routes
 * have the account rules' precedence over the record routes of the same paths. Plain reads of
 * _User stay with the class routes.
 */
export function registerUserRoutes(router: Router, users: Users, data: Data, publicUrl: () => string): void {
  const login = async (req: ApiRequest) => {
    const params = req.method === 'GET' ? req.query : { ...req.query, ...((req.body as object) ?? {}) };
    return { body: await users.logIn(req.ctx.caller, params, req.ctx.ip ?? null) };
  };
  router.add('POST', '/login', login);
  router.add('GET', '/login', login);
  // The SDKs send GET (as a POST with `_method`); the incumbent also answers POST.
  const verify = async (req: ApiRequest) => {
    const params = req.method === 'GET' ? req.query : { ...req.query, ...((req.body as object) ?? {}) };
    return { body: await users.verifyPassword(req.ctx.caller, params) };
  };
  router.add('GET', '/verifyPassword', verify);
  router.add('POST', '/verifyPassword', verify);
  router.add('POST', '/loginAs', async (req) => ({
    body: await users.logInAs(req.ctx.caller, { ...req.query, ...((req.body as object) ?? {}) }),
  }));
  router.add('POST', '/logout', async (req) => ({
    body: await users.logOut(req.ctx.caller, req.ctx.ip ?? null),
  }));
  router.add('GET', '/users/me', async (req) => ({ body: await users.me(req.ctx.caller) }));
  router.add('GET', '/sessions/me', async (req) => ({ body: await users.sessionMe(req.ctx.caller) }));
  router.add('POST', '/upgradeToRevocableSession', async (req) => ({
    body: await users.upgradeSession(req.ctx.caller),
  }));
  router.add('POST', '/requestPasswordReset', async (req) => ({
    body: users.requestPasswordReset(req.body, req.ctx),
  }));
  router.add('POST', '/verificationEmailRequest', async (req) => ({
    body: users.requestVerificationEmail(req.body),
  }));

  const account = (method: Method, pattern: string, handler: Handler) =>
    router.add(method, pattern, handler, ROUTE_PRECEDENCE.accountRules);
  for (const prefix of ['/users', '/classes/_User']) {
    account('POST', prefix, async (req) => {
      const { created, body } = await users.signUp(req.ctx.caller, req.body, req.ctx.ip ?? null, req.ctx);
      const location = `${publicUrl()}${prefix}/${body.objectId as string}`;
      return { status: created ? 201 : 200, body, headers: { Location: location } };
    });
    account('PUT', `${prefix}/:objectId`, async (req) => ({
      body: await users.update(req.ctx.caller, req.params.objectId!, req.body, req.ctx),
    }));
    account('DELETE', `${prefix}/:objectId`, async (req) => {
      await users.delete(req.ctx.caller, req.params.objectId!, req.ctx);
      return { body: {} };
    });
  }

  for (const prefix of ['/sessions', '/classes/_Session']) {
    account('GET', prefix, async (req) => ({ body: await users.findSessions(req.ctx.caller, req.query) }));
    account('GET', `${prefix}/:objectId`, async (req) => ({
      body: await users.getSession(req.ctx.caller, req.params.objectId!, req.query),
    }));
    account('DELETE', `${prefix}/:objectId`, async (req) => {
      await users.deleteSession(req.ctx.caller, req.params.objectId!);
      return { body: {} };
    });
    // Sessions are made by sign-up and login; only the master key writes them directly.
    account('POST', prefix, async (req) => {
      demandMaster(req.ctx.caller, 'sessionWrite');
      const created = await data.writes.create(req.ctx, '_Session', req.body);
      return {
        status: 201,
        body: created,
        headers: { Location: `${publicUrl()}${prefix}/${created.objectId}` },
      };
    });
    account('PUT', `${prefix}/:objectId`, async (req) => {
      demandMaster(req.ctx.caller, 'sessionWrite');
      return { body: await data.writes.update(req.ctx, '_Session', req.params.objectId!, req.body) };
    });
  }
}
