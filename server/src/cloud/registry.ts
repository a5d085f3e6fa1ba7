import { ANY_CLASS_NAME_PATTERN, FUNCTION_NAME_PATTERN, type LiveEventKind } from '@bds/client/protocol';
import { providerNameProblem } from '../config/options.ts';
import type { Row } from '../kernel/records.ts';
import type { FindQuery } from '../kernel/triggers.ts';

/** What cloud code reaches the data through: the same reads and the one write pipeline as REST. */
export interface DataApi {
  find(
    className: string,
    query?: Omit<Partial<FindQuery>, 'className'> & { count?: boolean },
  ): Promise<Row[]>;
  get(className: string, objectId: string, options?: { keys?: string; include?: string }): Promise<Row>;
  count(className: string, where?: Record<string, unknown>): Promise<number>;
  create(className: string, fields: Record<string, unknown>): Promise<Row>;
  update(className: string, objectId: string, fields: Record<string, unknown>): Promise<Row>;
  delete(className: string, objectId: string): Promise<void>;
}

/** The one argument of every handler (docs/protocol.md#cloud-code-module). */
export interface CloudRequest {
  /** Functions and jobs. */
  params: Record<string, unknown>;
  /** Save and delete triggers, login triggers: `{className, objectId, …fields}`. */
  object?: Row;
  original?: Row;
  /** Find triggers; beforeSubscribe (the subscription's, with `watch`). */
  query?: FindQuery & { watch?: string };
  /** afterFind. */
  results?: Row[];
  /** The caller's `_User` row (wire JSON, never the password), or undefined. */
  user: Row | undefined;
  master: boolean;
  installationId: string | null;
  ip: string | null;
  /**
   * The REST request's headers: lower-case names, the values of secret headers (keys, session
   * token, Authorization, Cookie) `[FILTERED]`; empty for realtime, account triggers and jobs.
   */
  headers: Record<string, string>;
  /** Shared by the before and after triggers of one request. */
  context: Record<string, unknown>;
  /** Jobs: progress, stored in `_JobStatus.message`. */
  message: (text: string) => void;
  api: { asCaller: DataApi; asMaster: DataApi };
  functionName?: string;
  jobName?: string;
  triggerName?: string;
  /**
   * Realtime triggers (the incumbent's fields): beforeConnect's `event`, `useMasterKey`, `clientKey`;
   * all give the `sessionToken`; beforeSubscribe's `op` and `requestId`; afterLiveQueryEvent's
   * `event` (the kind of frame), `useMasterKey`, `clients`, `subscriptions` and `sendEvent`.
   */
  event?: 'connect' | LiveEventKind;
  useMasterKey?: boolean;
  clientKey?: string;
  sessionToken?: string;
  op?: 'subscribe' | 'update';
  requestId?: number | string;
  /** afterLiveQueryEvent: open connections and subscriptions of this instance. */
  clients?: number;
  subscriptions?: number;
  /** afterLiveQueryEvent: set to false, the event is not sent to this subscriber. */
  sendEvent?: boolean;
}

export type Handler = (request: CloudRequest) => unknown;

/**
 * A sign-in provider's check (`cloud.authProvider`): `validate` resolves when `authData` proves its
 * `id` and throws otherwise (141 with the text). The request is a handler's, with `object` the user
 * the payload is linked to (none at sign-up) and `triggerName` validateSetUp, validateLogin or
 * validateUpdate. An adapter written for the incumbent (`validateAuthData(authData, options,
 * request)`) is taken as it is.
 */
export type AuthProviderAdapter =
  | { validate(authData: Record<string, unknown>, request: CloudRequest): unknown }
  | {
      validateAuthData(
        authData: Record<string, unknown>,
        options: Record<string, unknown>,
        request: CloudRequest,
      ): unknown;
    };

/** Who may call a function, and what its params must hold; a failed check answers 142. */
export interface FunctionRules {
  requireUser?: boolean;
  requireMaster?: boolean;
  /** The caller must hold at least one of these roles (directly or through other roles). */
  requireAnyUserRoles?: string[];
  fields?: Record<
    string,
    { type?: 'String' | 'Number' | 'Boolean' | 'Object' | 'Array'; required?: boolean }
  >;
}

export const CLASS_TRIGGERS = [
  'beforeSave',
  'afterSave',
  'beforeDelete',
  'afterDelete',
  'beforeFind',
  'afterFind',
  'beforeSubscribe',
  'afterLiveQueryEvent',
] as const;
export type ClassTrigger = (typeof CLASS_TRIGGERS)[number];
export const ACCOUNT_TRIGGERS = [
  'beforeLogin',
  'afterLogin',
  'afterLogout',
  'beforePasswordResetRequest',
] as const;
export type AccountTrigger = (typeof ACCOUNT_TRIGGERS)[number];
/** beforeConnect is about no class: kept under this name, as the incumbent keeps it. */
export const CONNECT_CLASS = '@Connect';

/** The registry object a cloud module's default export receives. */
export interface CloudDefinitions {
  define(name: string, handler: Handler, rules?: FunctionRules): void;
  job(name: string, handler: Handler): void;
  beforeSave(className: string, handler: Handler): void;
  afterSave(className: string, handler: Handler): void;
  beforeDelete(className: string, handler: Handler): void;
  afterDelete(className: string, handler: Handler): void;
  beforeFind(className: string, handler: Handler): void;
  afterFind(className: string, handler: Handler): void;
  beforeLogin(handler: Handler): void;
  afterLogin(handler: Handler): void;
  afterLogout(handler: Handler): void;
  beforePasswordResetRequest(handler: Handler): void;
  authProvider(name: string, adapter: AuthProviderAdapter): void;
  beforeConnect(handler: Handler): void;
  beforeSubscribe(className: string, handler: Handler): void;
  afterLiveQueryEvent(className: string, handler: Handler): void;
}

const NO_HANDLERS: readonly Handler[] = Object.freeze([]);

/**
 * In-process cloud code: what the modules registered (the option `cloud`, then the option
 * `parseCloud`, docs/cloud.md#order-of-triggers). A function or job name is defined once over all
 * modules; a class and trigger takes one handler per module, run in the order the modules loaded.
 */
export class CloudRegistry {
  readonly functions = new Map<string, { handler: Handler; rules: FunctionRules }>();
  readonly jobs = new Map<string, Handler>();
  readonly authProviders = new Map<string, AuthProviderAdapter>();
  private readonly triggers = new Map<string, Handler[]>();
  /** Classes with at least one trigger: most requests ask about a class without any. */
  private readonly classesWithTriggers = new Set<string>();

  /** The handlers of one class and trigger, in running order (none: an empty list). */
  trigger(className: string, name: ClassTrigger | AccountTrigger | 'beforeConnect'): readonly Handler[] {
    return this.triggers.get(`${className}.${name}`) ?? NO_HANDLERS;
  }

  private addTrigger(key: string, handler: Handler, registered: Set<string>, what: string): void {
    if (registered.has(key)) throw new Error(`${what} is registered twice.`);
    registered.add(key);
    const handlers = this.triggers.get(key);
    if (handlers) handlers.push(handler);
    else this.triggers.set(key, [handler]);
  }

  hasClassTriggers(className: string, names: readonly ClassTrigger[]): boolean {
    if (!this.classesWithTriggers.has(className)) return false;
    return names.some((n) => this.triggers.has(`${className}.${n}`));
  }

  /** What is registered, for GET /cloudCode and the console. */
  describe(): {
    functions: string[];
    jobs: string[];
    triggers: Array<{ className: string; triggerName: string }>;
  } {
    return {
      functions: [...this.functions.keys()].sort(),
      jobs: [...this.jobs.keys()].sort(),
      triggers: [...this.triggers.keys()].sort().map((key) => {
        const dot = key.lastIndexOf('.');
        return { className: key.slice(0, dot), triggerName: key.slice(dot + 1) };
      }),
    };
  }

  /**
   * The registry object handed to one cloud module; a bad registration stops the start. Each call
   * stands for one module: its triggers run after those of the modules before it.
   */
  definitions(): CloudDefinitions {
    const registered = new Set<string>();
    const handlerOf = (what: string, handler: unknown): Handler => {
      if (typeof handler !== 'function') throw new Error(`${what}: the handler must be a function.`);
      return handler as Handler;
    };
    const name = (what: string, value: unknown): string => {
      if (typeof value !== 'string' || !FUNCTION_NAME_PATTERN.test(value))
        throw new Error(`${what}: invalid name ${JSON.stringify(value)}.`);
      return value;
    };
    const onClass = (trigger: ClassTrigger) => (className: string, handler: Handler) => {
      if (typeof className !== 'string' || !ANY_CLASS_NAME_PATTERN.test(className)) {
        throw new Error(`cloud.${trigger}: invalid class name ${JSON.stringify(className)}.`);
      }
      const what = `cloud.${trigger}(${className})`;
      this.addTrigger(`${className}.${trigger}`, handlerOf(what, handler), registered, what);
      this.classesWithTriggers.add(className);
    };
    const onAccount =
      (trigger: AccountTrigger | 'beforeConnect', className = '_User') =>
      (handler: Handler) => {
        const what = `cloud.${trigger}`;
        this.addTrigger(`${className}.${trigger}`, handlerOf(what, handler), registered, what);
        this.classesWithTriggers.add(className);
      };
    return {
      define: (fn, handler, rules = {}) => {
        const n = name('cloud.define', fn);
        if (this.functions.has(n)) throw new Error(`cloud.define: function ${n} is defined twice.`);
        this.functions.set(n, { handler: handlerOf(`cloud.define(${n})`, handler), rules });
      },
      job: (job, handler) => {
        const n = name('cloud.job', job);
        if (this.jobs.has(n)) throw new Error(`cloud.job: job ${n} is defined twice.`);
        this.jobs.set(n, handlerOf(`cloud.job(${n})`, handler));
      },
      beforeSave: onClass('beforeSave'),
      afterSave: onClass('afterSave'),
      beforeDelete: onClass('beforeDelete'),
      afterDelete: onClass('afterDelete'),
      beforeFind: onClass('beforeFind'),
      afterFind: onClass('afterFind'),
      beforeLogin: onAccount('beforeLogin'),
      afterLogin: onAccount('afterLogin'),
      afterLogout: onAccount('afterLogout'),
      beforePasswordResetRequest: onAccount('beforePasswordResetRequest'),
      authProvider: (provider, adapter) => {
        const problem = typeof provider === 'string' ? providerNameProblem(provider) : 'not a string';
        if (problem)
          throw new Error(`cloud.authProvider: invalid name ${JSON.stringify(provider)} (${problem}).`);
        const check = adapter as Partial<Record<'validate' | 'validateAuthData', unknown>> | undefined;
        if (typeof check?.validate !== 'function' && typeof check?.validateAuthData !== 'function')
          throw new Error(`cloud.authProvider(${provider}): the adapter needs a validate function.`);
        if (this.authProviders.has(provider))
          throw new Error(`cloud.authProvider(${provider}) is registered twice.`);
        this.authProviders.set(provider, adapter);
      },
      beforeConnect: onAccount('beforeConnect', CONNECT_CLASS),
      beforeSubscribe: onClass('beforeSubscribe'),
      afterLiveQueryEvent: onClass('afterLiveQueryEvent'),
    };
  }
}
