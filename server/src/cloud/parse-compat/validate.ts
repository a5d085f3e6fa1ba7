import { isObject } from '@bds/client/protocol';
import { ErrorCode } from '../../kernel/errors.ts';
import { CloudAnswerError } from '../invoke.ts';

/**
 * The incumbent's validator objects (the third argument of `Parse.Cloud.define`, `beforeSave`
 * and the rest), with its texts: a refusal answers 142 with the text, or the field's `error`.
 * A validator may also be a function of the request; what it throws refuses the call.
 * (docs/cloud.md#cloud-code-written-for-the-incumbent)
 */
export interface IncumbentValidator {
  requireUser?: boolean;
  requireMaster?: boolean;
  validateMasterKey?: boolean;
  skipWithMasterKey?: boolean;
  requireAnyUserRoles?: string[];
  requireAllUserRoles?: string[];
  requireUserKeys?: string[] | Record<string, FieldRule>;
  fields?: string[] | Record<string, FieldRule | unknown>;
  rateLimit?: { requestTimeWindow?: number; requestCount?: number; errorResponseMessage?: string };
}

interface FieldRule {
  type?: unknown;
  default?: unknown;
  required?: boolean;
  constant?: boolean;
  options?: unknown;
  error?: string;
}

/** What a validator looks at: the request in the incumbent's shape, and the caller's role names. */
export interface ValidatedRequest {
  master: boolean;
  user?: any;
  object?: any;
  original?: any;
  params: Record<string, unknown>;
}

const refuse = (message: string): never => {
  throw new CloudAnswerError(ErrorCode.VALIDATION_ERROR, message);
};

/** The incumbent's name of a type given as a constructor (`String` is "string"). */
function typeName(type: unknown): string {
  const match = typeof type === 'function' ? type.toString().match(/^\s*function (\w+)/) : null;
  return (match?.[1] ?? '').toLowerCase();
}

async function checkOption(rule: FieldRule, key: string, value: unknown): Promise<void> {
  if (typeof rule.options === 'function') {
    let passed: unknown;
    try {
      passed = await rule.options(value);
    } catch (err) {
      refuse(rule.error ?? ((err as Error)?.message || `Validation failed. Invalid value for ${key}.`));
    }
    if (!passed && passed != null) refuse(rule.error ?? `Validation failed. Invalid value for ${key}.`);
    return;
  }
  const options = Array.isArray(rule.options) ? rule.options : [rule.options];
  if (!options.includes(value))
    refuse(rule.error ?? `Validation failed. Invalid option for ${key}. Expected: ${options.join(', ')}`);
}

/** Runs a validator before its handler; refusals throw 142. */
export async function runValidator(
  validator: IncumbentValidator | ((request: unknown) => unknown) | undefined,
  request: ValidatedRequest,
  roles: readonly string[],
): Promise<void> {
  if (!validator) return;
  if (typeof validator === 'function') {
    try {
      await validator(request);
    } catch (err) {
      if (err instanceof CloudAnswerError) throw err;
      const code = isObject(err) && typeof err.code === 'number' ? err.code : ErrorCode.VALIDATION_ERROR;
      throw new CloudAnswerError(code, messageText(err) || 'Validation failed.');
    }
    return;
  }
  // The master key passes the validator, unless it says validateMasterKey.
  if (request.master && (validator.skipWithMasterKey || !validator.validateMasterKey)) return;
  // A sign-up is made by the user it creates.
  const user =
    request.user ?? (request.object?.className === '_User' && !request.original ? request.object : undefined);
  const needsUser = validator.requireUser || validator.requireAnyUserRoles || validator.requireAllUserRoles;
  if (needsUser && !user) refuse('Validation failed. Please login to continue.');
  if (validator.requireMaster && !request.master)
    refuse('Validation failed. Master key is required to complete this request.');
  const params: Record<string, any> = request.object ? request.object.toJSON() : request.params;
  const fields = validator.fields;
  if (Array.isArray(fields)) {
    for (const key of fields)
      if (params[key] == null) refuse(`Validation failed. Please specify data for ${key}.`);
  } else if (isObject(fields)) {
    for (const [key, given] of Object.entries(fields)) {
      if (!isObject(given)) continue;
      const rule = given as FieldRule;
      let value = params[key];
      if (rule.default != null && value == null) {
        value = rule.default;
        params[key] = value;
        if (request.object) request.object.set(key, value);
        else request.params[key] = value;
      }
      if (rule.constant && request.object) {
        if (request.original) request.object.revert(key);
        else if (rule.default != null) request.object.set(key, rule.default);
      }
      if (rule.required && value == null)
        refuse(rule.error ?? `Validation failed. Please specify data for ${key}.`);
      if (!rule.required && value === undefined) continue;
      if (rule.type) {
        const expected = typeName(rule.type);
        const actual = Array.isArray(value) ? 'array' : typeof value;
        if (actual !== expected) refuse(`Validation failed. Invalid type for ${key}. Expected: ${expected}`);
      }
      if (rule.options !== undefined) await checkOption(rule, key, value);
    }
  }
  if (validator.requireAnyUserRoles && !validator.requireAnyUserRoles.some((r) => roles.includes(r)))
    refuse('Validation failed. User does not match the required roles.');
  if (validator.requireAllUserRoles && !validator.requireAllUserRoles.every((r) => roles.includes(r)))
    refuse('Validation failed. User does not match all the required roles.');
  const userKeys = validator.requireUserKeys;
  if (Array.isArray(userKeys)) {
    for (const key of userKeys)
      if (user?.get(key) == null) refuse(`Validation failed. Please set data for ${key} on your account.`);
  } else if (isObject(userKeys)) {
    for (const [key, rule] of Object.entries(userKeys)) {
      const value = user?.get(key);
      if (value == null) refuse(`Validation failed. Please set data for ${key} on your account.`);
      if (isObject(rule) && (rule as FieldRule).options !== undefined)
        await checkOption(rule as FieldRule, key, value);
    }
  }
}

function messageText(err: unknown): string {
  if (typeof err === 'string') return err;
  if (isObject(err) && typeof err.message === 'string') return err.message;
  return '';
}
