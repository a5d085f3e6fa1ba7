import { isObject } from '@bds/client/protocol';
import type { Webhooks } from '../hooks/webhooks.ts';
import type { Caller } from '../kernel/caller.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Invoker } from './invoke.ts';
import type { CloudRegistry, FunctionRules } from './registry.ts';
import { hookPayload, transportError } from './triggers.ts';

const validation = (message: string) =>
  new BdsError(ErrorCode.VALIDATION_ERROR, `Validation failed. ${message}`);

const TYPE_CHECKS: Record<string, (v: unknown) => boolean> = {
  String: (v) => typeof v === 'string',
  Number: (v) => typeof v === 'number' && Number.isFinite(v),
  Boolean: (v) => typeof v === 'boolean',
  Object: (v) => isObject(v),
  Array: (v) => Array.isArray(v),
};

/** Why this caller may not call a function of these rules, or undefined; the master key passes. */
function callerRefusal(rules: FunctionRules, caller: Caller): string | undefined {
  if (rules.requireMaster && !caller.isMaster) return 'Master key is required to complete this request.';
  if (caller.isMaster) return undefined;
  if ((rules.requireUser || rules.requireAnyUserRoles?.length) && !caller.user)
    return 'Please login to continue.';
  const roles = rules.requireAnyUserRoles;
  if (roles?.length && !roles.some((r) => caller.roles.includes(r))) {
    return `The caller must hold one of the roles: ${roles.join(', ')}.`;
  }
  return undefined;
}

/** A function's rules (who may call it, what its params hold); the master key passes the caller rules. */
export function checkRules(rules: FunctionRules, caller: Caller, params: Record<string, unknown>): void {
  const refusal = callerRefusal(rules, caller);
  if (refusal) throw validation(refusal);
  for (const [field, rule] of Object.entries(rules.fields ?? {})) {
    const value = params[field];
    if (value === undefined || value === null) {
      if (rule.required) throw validation(`Please specify data for ${field}.`);
      continue;
    }
    if (rule.type && !TYPE_CHECKS[rule.type]?.(value)) {
      throw validation(`Invalid type for ${field}. Expected: ${rule.type}.`);
    }
  }
}

/** POST /functions/<name>: the in-process function, else the webhook function, else 141. */
export class Functions {
  constructor(
    private readonly registry: CloudRegistry,
    private readonly webhooks: Webhooks,
    private readonly invoker: Invoker,
  ) {}

  async call(ctx: Ctx, name: string, params: Record<string, unknown>): Promise<unknown> {
    const fn = this.registry.functions.get(name);
    if (fn) {
      checkRules(fn.rules, ctx.caller, params);
      const request = await this.invoker.request(ctx, { params, functionName: name });
      return this.invoker.run(fn.handler, request, ErrorCode.SCRIPT_FAILED);
    }
    const url = this.webhooks.registry.functionUrl(name);
    if (!url) throw new BdsError(ErrorCode.SCRIPT_FAILED, `Invalid function: "${name}"`);
    const request = await this.invoker.request(ctx, { params, functionName: name });
    let answer: Awaited<ReturnType<Webhooks['call']>>;
    try {
      answer = await this.webhooks.call(
        { kind: 'function', url, functionName: name, requestId: ctx.requestId },
        hookPayload(request, { functionName: name, params }),
      );
    } catch (err) {
      throw transportError(err);
    }
    if (!answer.ok) throw new BdsError(ErrorCode.SCRIPT_FAILED, answer.error);
    return answer.value;
  }

  /**
   * The functions this caller may call, sorted (the API document): in-process ones whose caller
   * rules it passes, and the webhook ones (which have no rules here).
   */
  callableBy(caller: Caller): string[] {
    const names = new Set<string>();
    for (const [name, fn] of this.registry.functions) {
      if (callerRefusal(fn.rules, caller) === undefined) names.add(name);
    }
    for (const hook of this.webhooks.registry.listFunctions()) {
      if (!this.registry.functions.has(hook.functionName)) names.add(hook.functionName);
    }
    return [...names].sort();
  }

  /** Names of every function, in-process and webhook (for the console). */
  list(): Array<{ name: string; kind: 'cloud' | 'webhook'; url?: string }> {
    const out: Array<{ name: string; kind: 'cloud' | 'webhook'; url?: string }> = [];
    for (const name of this.registry.functions.keys()) out.push({ name, kind: 'cloud' });
    for (const hook of this.webhooks.registry.listFunctions()) {
      if (!this.registry.functions.has(hook.functionName))
        out.push({ name: hook.functionName, kind: 'webhook', url: hook.url });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }
}
