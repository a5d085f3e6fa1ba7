import { ROLE_NAME_PATTERN } from '@bds/client/protocol';
import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';

/**
 * Validation rules of the built-in classes (what a write must look like, not who may make it:
 * that is access/). Each throws the protocol error of a bad write.
 */

/** `_Role.name` on create: required, `^[0-9A-Za-z_\- ]+$` (139). */
export function checkRoleName(name: unknown): void {
  if (typeof name !== 'string' || name === '') {
    throw new BdsError(ErrorCode.INVALID_ROLE_NAME, 'A role needs a name.');
  }
  if (!ROLE_NAME_PATTERN.test(name)) {
    throw new BdsError(
      ErrorCode.INVALID_ROLE_NAME,
      `Invalid role name: ${JSON.stringify(name)}. A role name holds only letters, digits, _, - and spaces.`,
    );
  }
}

/** `_Role` updates: the name is immutable (even for master). */
export function checkRoleUpdate(fieldsWritten: readonly string[]): void {
  if (fieldsWritten.includes('name')) {
    throw new BdsError(
      ErrorCode.INVALID_ROLE_NAME,
      "A role's name can only be set before it has been saved.",
    );
  }
}

/** A `_Role` create refused by the unique index on `name` (137), in words that name the role. */
export const duplicateRoleName = (name: string): BdsError =>
  new BdsError(ErrorCode.DUPLICATE_VALUE, `A role named ${name} already exists.`);

export const roleCycle = (): BdsError =>
  new BdsError(
    ErrorCode.INVALID_ROLE_NAME,
    'A role cannot hold itself, directly or through other roles (cycle in the role graph).',
  );

/**
 * `_Installation` create (docs/protocol.md#built-in-classes): open to anonymous callers; the
 * X-Backend-Installation-Id header supplies `installationId` and, when the body also has one, must
 * match it (master may register any id). `deviceType` and `installationId` are required. Answers
 * the installation id to store.
 */
export function installationIdForCreate(caller: Caller, body: Record<string, unknown>): string {
  const header = caller.installationId;
  const given = body.installationId;
  if (given !== undefined && typeof given !== 'string') {
    throw new BdsError(ErrorCode.INCORRECT_TYPE, 'installationId must be a string.');
  }
  if (!caller.isMaster && given !== undefined && header && given !== header) {
    throw new BdsError(
      ErrorCode.OPERATION_FORBIDDEN,
      'installationId does not match the X-Backend-Installation-Id header.',
    );
  }
  const installationId = given ?? header ?? undefined;
  if (!installationId) {
    throw new BdsError(
      ErrorCode.MISSING_REQUIRED_FIELD,
      'installationId must be specified in this operation.',
    );
  }
  if (typeof body.deviceType !== 'string' || body.deviceType === '') {
    throw new BdsError(ErrorCode.MISSING_REQUIRED_FIELD, 'deviceType must be specified in this operation.');
  }
  return installationId;
}

/** `_Installation` immutable id fields: a write must leave them as stored. */
export const INSTALLATION_IMMUTABLE = ['installationId', 'deviceType'] as const;

export function checkInstallationImmutable(
  stored: Record<string, unknown>,
  written: Record<string, unknown>,
): void {
  for (const field of INSTALLATION_IMMUTABLE) {
    if (field in written && written[field] !== stored[field]) {
      throw new BdsError(ErrorCode.CHANGED_IMMUTABLE_FIELD, `${field} may not be changed in this operation.`);
    }
  }
}
