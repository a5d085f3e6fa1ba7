import { isObject } from '@bds/client/protocol';
import type { Data } from '../data/data.ts';
import { MASTER } from '../kernel/caller.ts';
import { type Ctx, ctxOf } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { WriteEvent } from '../kernel/events.ts';
import type { Row } from '../kernel/records.ts';
import type { HookClient } from './client.ts';

/** The triggers a webhook can serve (SPEC "Hooks"). */
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

const FUNCTION_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/;
const HOOKS = '_Hooks';

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
  ) {
    data.core.events.subscribe((event) => this.onWrite(event));
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

  // ---- registration (master only: the routes check) --------------------------------------------

  private checkUrl(url: unknown): string {
    const problem = this.client.urlProblem(url);
    if (problem) throw hookError(problem);
    return url as string;
  }

  private fields(body: unknown, allowed: string[], what: string): Record<string, unknown> {
    if (!isObject(body)) throw hookError(`${what} takes a JSON object {${allowed.join(', ')}}.`);
    for (const key of Object.keys(body)) {
      if (!allowed.includes(key))
        throw hookError(`Unknown field ${key}: ${what} takes {${allowed.join(', ')}}.`);
    }
    return body;
  }

  async createFunction(body: unknown): Promise<FunctionHook> {
    const { functionName, url } = this.fields(body, ['functionName', 'url'], 'A function hook');
    if (typeof functionName !== 'string' || !FUNCTION_NAME.test(functionName)) {
      throw hookError('functionName must be a name of letters, digits, _, - and . (starting with a letter).');
    }
    this.checkUrl(url);
    if (this.functions.has(functionName))
      throw hookError(`A function hook named ${functionName} already exists.`);
    await this.data.writes.create(this.system, HOOKS, { functionName, url });
    return { functionName, url: url as string };
  }

  async createTrigger(body: unknown): Promise<TriggerHook> {
    const { className, triggerName, url } = this.fields(
      body,
      ['className', 'triggerName', 'url'],
      'A trigger hook',
    );
    if (typeof className !== 'string' || !this.data.core.schemas.get(className)) {
      throw hookError(
        `Class ${typeof className === 'string' ? className : JSON.stringify(className)} does not exist.`,
      );
    }
    if (!WEBHOOK_TRIGGERS.includes(triggerName as WebhookTrigger)) {
      throw hookError(
        `Invalid trigger name ${JSON.stringify(triggerName)}: use ${WEBHOOK_TRIGGERS.join(', ')}.`,
      );
    }
    this.checkUrl(url);
    if (this.triggers.has(triggerKey(className, triggerName as string))) {
      throw hookError(`Class ${className} already has a hook for ${triggerName}.`);
    }
    await this.data.writes.create(this.system, HOOKS, { className, triggerName, url });
    return { className, triggerName: triggerName as WebhookTrigger, url: url as string };
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
    await this.data.writes.update(this.system, HOOKS, hook.objectId, { url: this.checkUrl(url) });
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
    await this.data.writes.update(this.system, HOOKS, hook.objectId, { url: this.checkUrl(url) });
    return { className, triggerName: hook.triggerName, url: url as string };
  }
}
