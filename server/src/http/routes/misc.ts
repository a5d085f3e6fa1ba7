import { BdsError, ErrorCode, incorrectType } from '../../errors.ts';
import { normaliseIso } from '../../query/parse.ts';
import type { Router } from '../router.ts';

const EVENT_NAME = /^[\w\-.]+$/;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const SERVER_VERSION = '0.1.0';

/** What this server supports, for the client's capability probe. */
export function features() {
  return {
    globalConfig: { create: true, read: true, update: true, delete: true },
    hooks: { create: false, read: false, update: false, delete: false },
    cloudCode: { jobs: false },
    logs: { level: false, size: false, order: false, until: false, from: false },
    push: {
      immediatePush: false,
      scheduledPush: false,
      storedPushData: false,
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
    analytics: { events: true, stored: false },
    users: true,
    liveQuery: false,
    files: false,
    aggregate: false,
  };
}

/** /serverInfo and /events/<name>. (/health is answered before credentials are checked.) */
export function registerMiscRoutes(router: Router): void {
  router.add('GET', '/serverInfo', async () => ({
    body: { serverVersion: SERVER_VERSION, features: features() },
  }));
  router.add('POST', '/events/:eventName', async (req) => {
    const name = req.params.eventName!;
    if (!EVENT_NAME.test(name)) {
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
    if (at !== undefined) {
      const iso = isObject(at) && at.__type === 'Date' ? at.iso : at;
      if (typeof iso !== 'string' || !/^\d{4}-\d{2}-\d{2}T/.test(iso) || !normaliseIso(iso)) {
        throw incorrectType('at must be an ISO 8601 date-time string.');
      }
    }
    // The default analytics adapter accepts events and stores nothing.
    return { body: {} };
  });
}
