import { FUNCTION_NAME_PATTERN, isObject } from '@bds/client/protocol';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { PendingWrite, WriteEvent, WriteTriggers } from '../kernel/events.ts';
import type { Row } from '../kernel/records.ts';
import type { HookClient } from './client.ts';

/** The triggers a webhook can serve (docs/protocol.md#hook-calls). */
export const WEBHOOK_TRIGGERS = ['beforeSave', 'afterSave', 'beforeDelete', 'afterDelete'] as const;
export type WebhookTrigger = (typeof WEBHOOK_TRIGGERS)[number];

export interface FunctionHook {
  functionName: string;
  url: string;
}
export interface TriggerHook {
  className: string;
  triggerName: WebhookTrigger;
  url: string;
}

const HOOKS = '_Hooks';
/** The fields a `_Hooks` row may be written with. */
const ROW_FIELDS = ['functionName', 'className', 'triggerName', 'url', 'ACL'];

const hookError = (message: string) => new BdsError(ErrorCode.WEBHOOK_ERROR, message);
const triggerKey = (className: string, triggerName: string) => `${className}.${triggerName}`;

/**
 * The registered webhooks: `_Hooks` rows, written through the write pipeline (master only) and
 * cached here. The cache follows the `_Hooks` write events, so a row written any other way (the
 * console's data browser, another instance on a shared bus) is seen too.
 */
export class HookRegistry {
  private readonly functions = new Map<string, FunctionHook & { objectId: string }>();
  private readonly triggers = new Map<string, TriggerHook & { objectId: string }>();
  private readonly system: Ctx = ctxOf(MASTER, 'system');

  constructor(
    private readonly data: Data,
    private readonly client: HookClient,
    /** Whether cloud code defines a function of that name (it would shadow a function hook). */
    private readonly isLocalFunction: (name: string) => boolean = () => false,
  ) {
    data.core.events.subscribe((event) => this.onWrite(event), { name: 'webhook registry', phase: 'caches' });
  }

  async load(): Promise<void> {
    this.functions.clear();
    this.triggers.clear();
    for (let skip = 0; ; skip += 1000) {
      const { results } = await this.data.reads.find(this.system, HOOKS, {
        limit: 1000,
        skip,
        order: 'createdAt',
      });
      for (const row of results) this.remember(row);
      if (results.length < 1000) return;
    }
  }

  private remember(row: Row): void {
    const objectId = row.objectId as string;
    if (typeof row.url !== 'string') return;
    if (typeof row.functionName === 'string') {
      this.functions.set(row.functionName, { functionName: row.functionName, url: row.url, objectId });
    } else if (typeof row.className === 'string' && typeof row.triggerName === 'string') {
      const triggerName = row.triggerName as WebhookTrigger;
      if (!WEBHOOK_TRIGGERS.includes(triggerName)) return;
      this.triggers.set(triggerKey(row.className, triggerName), {
        className: row.className,
        triggerName,
        url: row.url,
        objectId,
      });
    }
  }

  private forget(objectId: unknown): void {
    for (const [k, v] of this.functions) if (v.objectId === objectId) this.functions.delete(k);
    for (const [k, v] of this.triggers) if (v.objectId === objectId) this.triggers.delete(k);
  }

  private onWrite(event: WriteEvent): void {
    if (event.className !== HOOKS) return;
    if (event.op === 'purge') {
      this.functions.clear();
      this.triggers.clear();
      return;
    }
    if (event.before) this.forget(event.before.objectId);
    if (event.after) this.remember(event.after);
  }

  functionUrl(name: string): string | undefined {
    return this.functions.get(name)?.url;
  }

  triggerUrl(className: string, triggerName: WebhookTrigger): string | undefined {
    return this.triggers.get(triggerKey(className, triggerName))?.url;
  }

  hasTriggersFor(className: string): boolean {
    for (const t of this.triggers.values()) if (t.className === className) return true;
    return false;
  }

  listFunctions(): FunctionHook[] {
    return [...this.functions.values()].map(({ functionName, url }) => ({ functionName, url }));
  }

  listTriggers(): TriggerHook[] {
    return [...this.triggers.values()].map(({ className, triggerName, url }) => ({
      className,
      triggerName,
      url,
    }));
  }

  getFunction(name: string): FunctionHook {
    const hook = this.functions.get(name);
    if (!hook) throw hookError(`No function hook named ${name}.`);
    return { functionName: hook.functionName, url: hook.url };
  }

  getTrigger(className: string, triggerName: string): TriggerHook {
    const hook = this.triggers.get(triggerKey(className, triggerName));
    if (!hook) throw hookError(`No ${triggerName} hook for class ${className}.`);
    return { className: hook.className, triggerName: hook.triggerName, url: hook.url };
  }

  // ---- the rules of `_Hooks` rows (one copy: the /hooks routes and row writes alike) ------------

  /**
   * The before-write rule of `_Hooks` rows, for every writer (the /hooks routes, `/classes/_Hooks`,
   * batch members, cloud code): a row is a function hook `{functionName, url}` or a trigger hook
   * `{className, triggerName, url}`; the name, class, trigger and URL must be valid and the hook
   * must not exist yet. Refusals are 143 with the texts of the /hooks routes; nothing is written.
   */
  readonly rules: WriteTriggers = {
    hasBefore: (className, op) => className === HOOKS && op !== 'delete',
    before: async (write) => {
      this.checkRow(write);
      return undefined;
    },
  };

  private checkRow(write: Pick<PendingWrite, 'body' | 'original' | 'objectId'>): void {
    const body = write.body ?? {};
    for (const key of Object.keys(body)) {
      if (!ROW_FIELDS.includes(key)) {
        throw hookError(`Unknown field ${key}: a _Hooks row takes {${ROW_FIELDS.join(', ')}}.`);
      }
    }
    const row: Record<string, unknown> = { ...(write.original ?? {}) };
    for (const [key, value] of Object.entries(body)) {
      if (isObject(value) && value.__op === 'Delete') delete row[key];
      else row[key] = value;
    }
    const self = write.objectId ?? undefined;
    const given = (key: string) => row[key] !== undefined && row[key] !== null;
    if (given('functionName')) {
      if (given('className') || given('triggerName')) {
        throw hookError(
          'A hook is a function hook {functionName, url} or a trigger hook {className, triggerName, url}, not both.',
        );
      }
      this.checkFunction(row.functionName, row.url, self);
    } else if (given('className') || given('triggerName')) {
      this.checkTrigger(row.className, row.triggerName, row.url, self);
    } else {
      throw hookError('A hook needs functionName, or className and triggerName.');
    }
  }

  private checkUrl(url: unknown): void {
    const problem = this.client.urlProblem(url);
    if (problem) throw hookError(problem);
  }

  private checkFunction(functionName: unknown, url: unknown, self: string | undefined): void {
    if (typeof functionName !== 'string' || !FUNCTION_NAME_PATTERN.test(functionName)) {
      throw hookError('functionName must be a name of letters, digits, _, - and . (starting with a letter).');
    }
    this.checkUrl(url);
    const existing = this.functions.get(functionName);
    if (existing && existing.objectId !== self) {
      throw hookError(`A function hook named ${functionName} already exists.`);
    }
    if (this.isLocalFunction(functionName)) {
      throw hookError(
        `Cloud code defines a function named ${functionName}: it would always be called instead of a function hook of that name.`,
      );
    }
  }

  private checkTrigger(
    className: unknown,
    triggerName: unknown,
    url: unknown,
    self: string | undefined,
  ): void {
    if (typeof className !== 'string' || !this.data.core.schemas.get(className)) {
      throw hookError(
        typeof className === 'string'
          ? `Class ${className} does not exist.`
          : 'className must be the name of an existing class.',
      );
    }
    if (!WEBHOOK_TRIGGERS.includes(triggerName as WebhookTrigger)) {
      throw hookError(
        `Invalid trigger name ${JSON.stringify(triggerName ?? null)}: use ${WEBHOOK_TRIGGERS.join(', ')}.`,
      );
    }
    this.checkUrl(url);
    const existing = this.triggers.get(triggerKey(className, triggerName as string));
    if (existing && existing.objectId !== self) {
      throw hookError(`Class ${className} already has a hook for ${triggerName}.`);
    }
  }

  // ---- registration (master only: the routes check) --------------------------------------------

  private fields(body: unknown, allowed: string[], what: string): Record<string, unknown> {
    if (!isObject(body)) throw hookError(`${what} takes a JSON object {${allowed.join(', ')}}.`);
    for (const key of Object.keys(body)) {
      if (!allowed.includes(key))
        throw hookError(`Unknown field ${key}: ${what} takes {${allowed.join(', ')}}.`);
    }
    return body;
  }

  /**
   * A write of a `_Hooks` row by the routes. The row rules run first here (so a malformed body is
   * 143 whatever the pipeline validates before its triggers), then again in the pipeline; the
   * store's unique indexes on `_Hooks` settle two registrations racing past them: the loser gets
   * the duplicate text (143).
   */
  private async write(
    row: Pick<PendingWrite, 'body' | 'original' | 'objectId'>,
    duplicate: string | undefined,
    run: () => Promise<unknown>,
  ): Promise<void> {
    this.checkRow(row);
    try {
      await run();
    } catch (err) {
      if (duplicate && err instanceof BdsError && err.code === ErrorCode.DUPLICATE_VALUE)
        throw hookError(duplicate);
      throw err;
    }
  }

  async createFunction(body: unknown): Promise<FunctionHook> {
    const { functionName, url } = this.fields(body, ['functionName', 'url'], 'A function hook');
    const row = { functionName, url };
    await this.write(
      { body: row, original: null, objectId: null },
      `A function hook named ${String(functionName)} already exists.`,
      () => this.data.writes.create(this.system, HOOKS, row),
    );
    return { functionName: functionName as string, url: url as string };
  }

  async createTrigger(body: unknown): Promise<TriggerHook> {
    const { className, triggerName, url } = this.fields(
      body,
      ['className', 'triggerName', 'url'],
      'A trigger hook',
    );
    const row = { className, triggerName, url };
    await this.write(
      { body: row, original: null, objectId: null },
      `Class ${String(className)} already has a hook for ${String(triggerName)}.`,
      () => this.data.writes.create(this.system, HOOKS, row),
    );
    return { className: className as string, triggerName: triggerName as WebhookTrigger, url: url as string };
  }

  /** PUT: `{url}` changes the receiver; `{"__op": "Delete"}` removes the hook. Answers the hook or null. */
  async changeFunction(name: string, body: unknown): Promise<FunctionHook | null> {
    const hook = this.functions.get(name);
    if (!hook) throw hookError(`No function hook named ${name}.`);
    if (isObject(body) && body.__op === 'Delete') {
      await this.data.writes.delete(this.system, HOOKS, hook.objectId);
      return null;
    }
    const { url } = this.fields(body, ['url'], 'Changing a hook');
    const { objectId, ...original } = hook;
    await this.write({ body: { url }, original, objectId }, undefined, () =>
      this.data.writes.update(this.system, HOOKS, objectId, { url }),
    );
    return { functionName: name, url: url as string };
  }

  async changeTrigger(className: string, triggerName: string, body: unknown): Promise<TriggerHook | null> {
    const hook = this.triggers.get(triggerKey(className, triggerName));
    if (!hook) throw hookError(`No ${triggerName} hook for class ${className}.`);
    if (isObject(body) && body.__op === 'Delete') {
      await this.data.writes.delete(this.system, HOOKS, hook.objectId);
      return null;
    }
    const { url } = this.fields(body, ['url'], 'Changing a hook');
    const { objectId, ...original } = hook;
    await this.write({ body: { url }, original, objectId }, undefined, () =>
      this.data.writes.update(this.system, HOOKS, objectId, { url }),
    );
    return { className, triggerName: hook.triggerName, url: url as string };
  }
}
