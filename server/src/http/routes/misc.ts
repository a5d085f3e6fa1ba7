import { EVENT_NAME_PATTERN, isObject } from '@bds/client/protocol';
import type { ServiceOptions } from '../../config/options.ts';
import { describeOptions } from '../../config/options-view.ts';
import { demandMaster } from '../../data/authorize.ts';
import { BdsError, ErrorCode, incorrectType } from '../../kernel/errors.ts';
import { normaliseIso } from '../../query/parse.ts';
import type { Router } from '../router.ts';

export const SERVER_VERSION = '0.1.0';

/** What the options turn on, for the features block. */
export interface FeatureSwitches {
  push: boolean;
  analyticsStored: boolean;
  /** Whether any class is open to realtime subscriptions (liveQuery.classNames not empty). */
  liveQuery: boolean;
}

/** What this server supports, for the client's capability probe. */
export function features(on: FeatureSwitches = { push: false, analyticsStored: false, liveQuery: true }) {
  return {
    globalConfig: { create: true, read: true, update: true, delete: true },
    hooks: { create: true, read: true, update: true, delete: true },
    cloudCode: { jobs: true, schedules: true },
    logs: { level: false, size: false, order: false, until: false, from: false },
    push: {
      immediatePush: on.push,
      scheduledPush: on.push,
      storedPushData: on.push,
      pushAudiences: false,
      localization: false,
    },
    schemas: {
      addField: true,
      removeField: true,
      addClass: true,
      removeClass: true,
      clearAllDataFromClass: true,
      exportClass: false,
      editClassLevelPermissions: true,
      editPointerPermissions: false,
    },
    query: {
      relatedTo: true,
      subqueries: true,
      geo: true,
      regexOptions: ['i', 'm', 's', 'x'],
      include: true,
      count: true,
    },
    batch: { transaction: true },
    analytics: { events: true, stored: on.analyticsStored },
    users: true,
    liveQuery: on.liveQuery,
    files: true,
    aggregate: true,
    vectorSearch: true,
    idempotency: true,
  };
}

/** Where accepted events go (the analytics adapter); by default nowhere. */
export type TrackEvent = (event: {
  name: string;
  dimensions: Record<string, string>;
  at: string;
}) => Promise<void>;

/** What the options view needs: the validated options and the cloud module's sign-in providers. */
export interface ServerOptionsSource {
  options: ServiceOptions;
  cloudProviders: readonly string[];
}

/**
 * /serverInfo, /serverInfo/options (master only) and /events/<name>. (/health is answered before
 * credentials are checked.) The options have a path of their own rather than a master-only part
 * of /serverInfo: /serverInfo answers every caller the same, and any other caller of the options
 * gets the master-only refusal rather than an answer that silently lacks them.
 */
export function registerMiscRoutes(
  router: Router,
  hooks: { track?: TrackEvent; switches?: FeatureSwitches; serverOptions?: ServerOptionsSource } = {},
): void {
  router.add('GET', '/serverInfo', async () => ({
    body: { serverVersion: SERVER_VERSION, features: features(hooks.switches) },
  }));
  const source = hooks.serverOptions;
  if (source) {
    router.add('GET', '/serverInfo/options', async (req) => {
      demandMaster(req.ctx.caller, 'serverOptions');
      return { body: describeOptions(source.options, source.cloudProviders) };
    });
  }
  router.add('POST', '/events/:eventName', async (req) => {
    const name = req.params.eventName!;
    if (!EVENT_NAME_PATTERN.test(name)) {
      throw new BdsError(
        ErrorCode.INVALID_EVENT_NAME,
        `Invalid event name: ${JSON.stringify(name)}. Use letters, digits, _, - and .`,
      );
    }
    const body = req.body ?? {};
    if (!isObject(body)) throw new BdsError(ErrorCode.INVALID_JSON, 'The event body must be a JSON object.');
    const { dimensions, at, ...rest } = body;
    const extra = Object.keys(rest);
    if (extra.length)
      throw new BdsError(ErrorCode.INVALID_JSON, `Unknown event field: ${extra[0]}. Use dimensions and at.`);
    if (dimensions !== undefined) {
      if (!isObject(dimensions) || !Object.values(dimensions).every((v) => typeof v === 'string')) {
        throw incorrectType('dimensions must map strings to strings.');
      }
    }
    let when = new Date().toISOString();
    if (at !== undefined) {
      const iso = isObject(at) && at.__type === 'Date' ? at.iso : at;
      const normal = typeof iso === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(iso) ? normaliseIso(iso) : null;
      if (!normal) throw incorrectType('at must be an ISO 8601 date-time string.');
      when = normal;
    }
    // The default analytics adapter accepts events and stores nothing.
    await hooks.track?.({ name, dimensions: (dimensions ?? {}) as Record<string, string>, at: when });
    return { body: {} };
  });
}
