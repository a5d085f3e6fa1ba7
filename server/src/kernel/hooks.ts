import type { Ctx } from './context.ts';
import type { PendingWrite, WriteTriggers } from './events.ts';
import type { Row } from './records.ts';
import type { AccountTriggers, FindQuery, ReadTriggers } from './triggers.ts';

/** The url of a stored file, from the current public address. */
export type FileUrlBuilder = (name: string) => string;

/** One hook in a chain: who bound it, and where it runs (lower priority first). */
export interface HookBinding {
  name: string;
  priority: number;
}

interface Bound<T> extends HookBinding {
  hook: T;
}

/**
 * The hooks bound to one point of the service, in the order they run: by priority, lowest first,
 * then in the order they were bound. Bindings are made while the service starts (createService,
 * server/src/index.ts) and the chain is sealed before it serves; a sealed chain refuses any
 * binding, so what runs is what `list()` shows.
 */
export class HookChain<T> {
  private bound: readonly Bound<T>[] = [];
  /** The hooks alone, in running order: what the call sites walk. */
  private running: readonly T[] = [];
  private sealed = false;

  constructor(
    readonly point: string,
    /** How many bindings the point takes (one for a builder, any number for a chain). */
    private readonly most = Number.POSITIVE_INFINITY,
  ) {}

  bind(name: string, priority: number, hook: T): void {
    if (this.sealed) {
      throw new Error(
        `The ${this.point} hooks are sealed: bind them in createService, before the service starts.`,
      );
    }
    if (this.bound.some((b) => b.name === name)) {
      throw new Error(`${name} is bound to the ${this.point} hooks twice.`);
    }
    if (this.bound.length >= this.most) {
      throw new Error(`The ${this.point} hook takes one binding: ${this.bound[0]!.name} is bound already.`);
    }
    // Array.prototype.sort is stable: equal priorities keep the order they were bound in.
    const bound = [...this.bound, { name, priority, hook }].sort((a, b) => a.priority - b.priority);
    this.bound = bound;
    this.running = bound.map((b) => b.hook);
  }

  /** The hooks in running order. */
  get hooks(): readonly T[] {
    return this.running;
  }

  get isEmpty(): boolean {
    return this.running.length === 0;
  }

  list(): HookBinding[] {
    return this.bound.map(({ name, priority }) => ({ name, priority }));
  }

  seal(): void {
    this.sealed = true;
    Object.freeze(this);
  }
}

/**
 * Write hooks one after the other (the write rules, the before-write triggers): each gets the body
 * the one before it answered; the chain answers the last body, or undefined when none changed it.
 */
export class WriteHookChain extends HookChain<WriteTriggers> implements WriteTriggers {
  hasBefore(className: string, op: PendingWrite['op']): boolean {
    const hooks = this.hooks;
    for (let i = 0; i < hooks.length; i++) if (hooks[i]!.hasBefore(className, op)) return true;
    return false;
  }

  async before(write: PendingWrite): Promise<Record<string, unknown> | undefined> {
    let body = write.body;
    for (const hook of this.hooks) {
      if (!hook.hasBefore(write.className, write.op)) continue;
      body = (await hook.before(body === write.body ? write : { ...write, body })) ?? body;
    }
    return body === write.body ? undefined : (body ?? undefined);
  }
}

/**
 * beforeFind and afterFind, as a pair: a read asks once whether any applies to the class, runs
 * every beforeFind (each narrows what the one before it answered), then, on the rows access
 * control left, every afterFind with the query that was run.
 */
export class FindHookChain extends HookChain<ReadTriggers> implements ReadTriggers {
  hasFind(className: string): boolean {
    const hooks = this.hooks;
    for (let i = 0; i < hooks.length; i++) if (hooks[i]!.hasFind(className)) return true;
    return false;
  }

  async beforeFind(ctx: Ctx, query: FindQuery): Promise<FindQuery> {
    for (const hook of this.hooks) {
      if (hook.hasFind(query.className)) query = await hook.beforeFind(ctx, query);
    }
    return query;
  }

  async afterFind(ctx: Ctx, query: FindQuery, rows: Row[]): Promise<Row[]> {
    for (const hook of this.hooks) {
      if (hook.hasFind(query.className)) rows = await hook.afterFind(ctx, query, rows);
    }
    return rows;
  }
}

/**
 * The account events (beforeLogin may refuse a login, beforePasswordResetRequest a reset mail;
 * afterLogin and afterLogout only hear of one).
 */
export class AccountHookChain extends HookChain<AccountTriggers> implements AccountTriggers {
  async beforeLogin(ctx: Ctx, user: Row): Promise<void> {
    for (const hook of this.hooks) await hook.beforeLogin(ctx, user);
  }

  afterLogin(ctx: Ctx, user: Row): void {
    for (const hook of this.hooks) hook.afterLogin(ctx, user);
  }

  afterLogout(ctx: Ctx, session: Row): void {
    for (const hook of this.hooks) hook.afterLogout(ctx, session);
  }

  async beforePasswordResetRequest(ctx: Ctx, user: Row): Promise<void> {
    for (const hook of this.hooks) await hook.beforePasswordResetRequest?.(ctx, user);
  }
}

/** The bindings of every chain, by chain, in running order. */
export type HookListing = Record<
  'writeRules' | 'beforeWrite' | 'find' | 'account' | 'fileUrl',
  HookBinding[]
>;

/**
 * Every point where other parts of the service hook into the data layer, bound in one place
 * (createService) and sealed before the service serves. After commit, the event bus is the hook:
 * its listeners declare a phase (kernel/events.ts `EventBus`).
 *
 * - `writeRules`: rules of built-in classes kept outside data/ (`_Hooks`, `_JobSchedule`), part of
 *   the pipeline's validate step: run before the body is checked against the schema (so they answer
 *   their own codes and texts), and again on whatever the before-write triggers changed.
 * - `beforeWrite`: the before-write triggers (cloud code, then webhooks): may refuse or change a write.
 * - `find`: beforeFind and afterFind (cloud code).
 * - `account`: beforeLogin, afterLogin, afterLogout (cloud code).
 * - `fileUrl`: the url of a stored file (one builder, from the current public address).
 */
export class HookRegistry {
  readonly writeRules = new WriteHookChain('writeRules');
  readonly beforeWrite = new WriteHookChain('beforeWrite');
  readonly find = new FindHookChain('find');
  readonly account = new AccountHookChain('account');
  readonly fileUrl = new HookChain<FileUrlBuilder>('fileUrl', 1);

  list(): HookListing {
    return {
      writeRules: this.writeRules.list(),
      beforeWrite: this.beforeWrite.list(),
      find: this.find.list(),
      account: this.account.list(),
      fileUrl: this.fileUrl.list(),
    };
  }

  /** No binding is made after this: the chains are what `list()` shows for the life of the service. */
  seal(): void {
    for (const chain of [this.writeRules, this.beforeWrite, this.find, this.account, this.fileUrl])
      chain.seal();
    Object.freeze(this);
  }
}
