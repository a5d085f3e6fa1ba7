import { randomBytes } from 'node:crypto';
import type { Client } from '@bds/client';
import { FUNCTION_NAME_PATTERN } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, bodyOf, param, parse, unwrap } from './http.ts';
import { readRow } from './rows.ts';
import { className, jsonObject, objectId } from './schemas-edge.ts';

const name = z.string().regex(FUNCTION_NAME_PATTERN, 'must be a function or job name');
const runFunctionBody = z.strictObject({ params: jsonObject.default({}), userId: objectId.optional() });
const runJobBody = z.strictObject({ params: jsonObject.default({}) });
/** Most rows one "run on the selected rows" may name (one function call each). */
export const ROWS_RUN_MAX = 100;
const runOnRowsBody = z.strictObject({
  className,
  objectIds: z.array(objectId).min(1).max(ROWS_RUN_MAX),
  params: jsonObject.default({}),
});
const scheduleBody = z.strictObject({
  jobName: z.string().min(1).max(128).optional(),
  cron: z.string().min(1).max(200).optional(),
  timeZone: z.string().min(1).max(100).optional(),
  params: jsonObject.optional(),
  enabled: z.boolean().optional(),
  startAfter: z.union([z.iso.datetime(), z.null()]).optional(),
  catchUp: z.union([z.enum(['once', 'each', 'skip']), z.null()]).optional(),
});
const statusQuery = z.strictObject({
  jobName: name.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
const deliveryQuery = z.strictObject({
  kind: z.enum(['function', 'trigger']).optional(),
  status: z.enum(['succeeded', 'failed', 'retrying']).optional(),
  className: z.string().max(120).optional(),
  triggerName: z.string().max(40).optional(),
  functionName: z.string().max(128).optional(),
  hook: z.string().max(250).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
const master = { useMasterKey: true } as const;

/** Runs a function as a user without the user's password: a short session made with the master key. */
async function asUser<T>(client: Client, userId: string, fn: (token: string) => Promise<T>): Promise<T> {
  const sessionToken = `r:${randomBytes(16).toString('hex')}`;
  const session = unwrap(
    await client.create<{ objectId: string }>(
      '_Session',
      {
        user: { __type: 'Pointer', className: '_User', objectId: userId },
        sessionToken,
        expiresAt: { __type: 'Date', iso: new Date(Date.now() + 5 * 60_000).toISOString() },
        createdWith: { action: 'console', authProvider: 'master' },
        ACL: {},
      },
      master,
    ),
  );
  try {
    return await fn(sessionToken);
  } finally {
    await client.destroy('_Session', session.objectId, master);
  }
}

/** A schedule as the console sends it, as the service takes it: null removes a field (the default applies). */
const scheduleFields = (body: z.output<typeof scheduleBody>) => {
  const { startAfter, catchUp, ...rest } = body;
  return {
    ...rest,
    ...(startAfter === undefined
      ? {}
      : { startAfter: startAfter === null ? { __op: 'Delete' } : { __type: 'Date', iso: startAfter } }),
    ...(catchUp === undefined ? {} : { catchUp: catchUp ?? { __op: 'Delete' } }),
  };
};

/** The service's catch-up policy for missed ticks (its options `jobs.catchUp`, `jobs.catchUpMax`). */
async function catchUpDefault(client: Client): Promise<{ policy: string; max: number }> {
  const view = unwrap(
    await client.request<{ groups: Array<{ options: Array<{ name: string; value?: unknown }> }> }>(
      'GET',
      '/serverInfo/options',
      master,
    ),
  );
  const value = (name: string) => view.groups.flatMap((g) => g.options).find((o) => o.name === name)?.value;
  return { policy: String(value('jobs.catchUp') ?? 'once'), max: Number(value('jobs.catchUpMax') ?? 24) };
}

/** The order triggers are listed in within a class (the order they run in), then by name. */
const TRIGGER_ORDER = ['beforeSave', 'afterSave', 'beforeDelete', 'afterDelete', 'beforeFind', 'afterFind'];
const triggerRank = (name: string) => {
  const i = TRIGGER_ORDER.indexOf(name);
  return i < 0 ? TRIGGER_ORDER.length : i;
};

export interface ClassTrigger {
  triggerName: string;
  /** In-process (the cloud module) or a webhook (with its receiver). */
  kind: 'cloud code' | 'webhook';
  url?: string;
}

/** Every trigger, in-process and webhook, grouped per class (classes by name). */
export function triggersByClass(
  inProcess: Array<{ className: string; triggerName: string }>,
  webhooks: Array<{ className: string; triggerName: string; url: string }>,
): Array<{ className: string; triggers: ClassTrigger[] }> {
  const classes = new Map<string, ClassTrigger[]>();
  const add = (cls: string, t: ClassTrigger) => classes.set(cls, [...(classes.get(cls) ?? []), t]);
  for (const t of inProcess) add(t.className, { triggerName: t.triggerName, kind: 'cloud code' });
  for (const h of webhooks) add(h.className, { triggerName: h.triggerName, kind: 'webhook', url: h.url });
  return [...classes]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([cls, triggers]) => ({
      className: cls,
      // Cloud code runs before the webhook of the same trigger: listed in that order.
      triggers: triggers.sort(
        (a, b) =>
          triggerRank(a.triggerName) - triggerRank(b.triggerName) ||
          a.triggerName.localeCompare(b.triggerName) ||
          (a.kind === 'cloud code' ? -1 : 1),
      ),
    }));
}

/**
 * The console's Cloud section: functions (run as master or as a chosen user), jobs and their
 * `_JobStatus` history, `_JobSchedule` rows, webhooks and their delivery log.
 */
export function registerCloudRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/cloud';

  router.get(
    base,
    appRoute(ctx, {}, async ({ client }) => {
      const code = unwrap(await client.request('GET', '/cloudCode', master));
      const triggers = unwrap(await client.request('GET', '/hooks/triggers', master));
      return {
        ...code,
        webhookTriggers: triggers.results,
        triggersByClass: triggersByClass(code.triggers ?? [], triggers.results),
      };
    }),
  );

  router.post(
    `${base}/functions/:name`,
    appRoute(ctx, { write: true }, async (s) => {
      const fn = parse(name, param(s.req, 'name'), 'function name');
      const { params, userId } = parse(runFunctionBody, bodyOf(s.req), 'function call');
      const started = performance.now();
      const call = (sessionToken?: string) =>
        s.client.request('POST', `/functions/${encodeURIComponent(fn)}`, {
          body: params,
          ...(sessionToken ? { sessionToken } : master),
        });
      const res = userId ? await asUser(s.client, userId, call) : await call();
      const durationMs = Math.round((performance.now() - started) * 10) / 10;
      const answer = res.success
        ? { ok: true, result: res.data?.result ?? null, durationMs }
        : { ok: false, code: res.code, error: res.error, durationMs };
      s.audit('cloud.function.run', fn, { params, as: userId ? `_User/${userId}` : 'master' }, answer);
      return answer;
    }),
  );

  // A function run once per selected row of the data browser, as master, with the row's
  // className and objectId among its params; one audit entry for the whole run.
  router.post(
    `${base}/functions/:name/rows`,
    appRoute(ctx, { write: true }, async (s) => {
      const fn = parse(name, param(s.req, 'name'), 'function name');
      const body = parse(runOnRowsBody, bodyOf(s.req), 'function run on rows');
      const results: Array<
        { objectId: string } & ({ ok: true; result: unknown } | { ok: false; code: number; error: string })
      > = [];
      for (const id of body.objectIds) {
        const res = await s.client.request('POST', `/functions/${encodeURIComponent(fn)}`, {
          body: { ...body.params, className: body.className, objectId: id },
          ...master,
        });
        results.push(
          res.success
            ? { objectId: id, ok: true, result: res.data?.result ?? null }
            : { objectId: id, ok: false, code: res.code, error: res.error },
        );
      }
      const failed = results.filter((r) => !r.ok).length;
      const answer = { results, succeeded: results.length - failed, failed };
      s.audit('cloud.function.runOnRows', fn, body, answer);
      return answer;
    }),
  );

  router.post(
    `${base}/jobs/:name`,
    appRoute(ctx, { write: true }, async (s) => {
      const job = parse(name, param(s.req, 'name'), 'job name');
      const { params } = parse(runJobBody, bodyOf(s.req), 'job parameters');
      const statusId = await s.client.runJob(job, params, master);
      s.audit('cloud.job.run', job, { params }, { statusId });
      return { statusId };
    }),
  );

  router.get(
    `${base}/jobs/status`,
    appRoute(ctx, {}, async ({ req, client }) => {
      const q = parse(statusQuery, req.query, 'query');
      return unwrap(
        await client.find(
          '_JobStatus',
          { where: q.jobName ? { jobName: q.jobName } : {}, order: '-createdAt', limit: q.limit },
          master,
        ),
      );
    }),
  );

  router.get(
    `${base}/schedules`,
    appRoute(ctx, {}, async ({ client }) => ({
      ...unwrap(await client.find('_JobSchedule', { order: 'createdAt', limit: 1000 }, master)),
      // What a schedule without its own `catchUp` does with missed ticks.
      catchUp: await catchUpDefault(client),
    })),
  );

  router.post(
    `${base}/schedules`,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const fields = scheduleFields(parse(scheduleBody, bodyOf(s.req), 'schedule'));
      const created = unwrap(await s.client.create<{ objectId: string }>('_JobSchedule', fields, master));
      const after = await readRow(s.client, '_JobSchedule', created.objectId);
      s.audit('cloud.schedule.create', `_JobSchedule/${created.objectId}`, null, after);
      return after;
    }),
  );

  router.put(
    `${base}/schedules/:objectId`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = parse(objectId, param(s.req, 'objectId'), 'schedule id');
      const fields = scheduleFields(parse(scheduleBody, bodyOf(s.req), 'schedule'));
      const before = await readRow(s.client, '_JobSchedule', id);
      unwrap(await s.client.update('_JobSchedule', id, fields, master));
      const after = await readRow(s.client, '_JobSchedule', id);
      s.audit('cloud.schedule.update', `_JobSchedule/${id}`, before, after);
      return after;
    }),
  );

  router.delete(
    `${base}/schedules/:objectId`,
    appRoute(ctx, { write: true }, async (s) => {
      const id = parse(objectId, param(s.req, 'objectId'), 'schedule id');
      const before = await readRow(s.client, '_JobSchedule', id);
      unwrap(await s.client.destroy('_JobSchedule', id, master));
      s.audit('cloud.schedule.delete', `_JobSchedule/${id}`, before, null);
      return {};
    }),
  );

  // Webhooks: the service checks and refuses (143); the console passes its word on.
  const hookRoute = (method: 'POST' | 'PUT' | 'DELETE', path: (s: AppScope) => string, action: string) =>
    appRoute(ctx, { write: true, status: method === 'POST' ? 201 : 200 }, async (s) => {
      const target = path(s);
      const body = method === 'DELETE' ? undefined : bodyOf(s.req);
      const answer = unwrap(await s.client.request(method, `/hooks/${target}`, { ...master, body }));
      s.audit(action, `hooks/${target}`, body ?? null, answer);
      return answer;
    });
  const fnPath = (s: AppScope) => `functions/${encodeURIComponent(param(s.req, 'name'))}`;
  const triggerPath = (s: AppScope) =>
    `triggers/${encodeURIComponent(param(s.req, 'className'))}/${encodeURIComponent(param(s.req, 'triggerName'))}`;
  router.post(
    `${base}/hooks/functions`,
    hookRoute('POST', () => 'functions', 'cloud.hook.create'),
  );
  router.post(
    `${base}/hooks/triggers`,
    hookRoute('POST', () => 'triggers', 'cloud.hook.create'),
  );
  router.put(`${base}/hooks/functions/:name`, hookRoute('PUT', fnPath, 'cloud.hook.update'));
  router.put(
    `${base}/hooks/triggers/:className/:triggerName`,
    hookRoute('PUT', triggerPath, 'cloud.hook.update'),
  );
  router.delete(`${base}/hooks/functions/:name`, hookRoute('DELETE', fnPath, 'cloud.hook.delete'));
  router.delete(
    `${base}/hooks/triggers/:className/:triggerName`,
    hookRoute('DELETE', triggerPath, 'cloud.hook.delete'),
  );

  router.get(
    `${base}/deliveries`,
    appRoute(ctx, {}, async ({ req, client }) => {
      const q = parse(deliveryQuery, req.query, 'query');
      return unwrap(await client.request('GET', '/hooks/deliveries', { ...master, query: q }));
    }),
  );
}
