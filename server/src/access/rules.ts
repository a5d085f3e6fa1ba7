import { ROLE_NAME_PATTERN } from '../auth/roles.ts';
import type { Auth } from '../data/auth.ts';
import { ErrorCode } from '../errors.ts';
import { allow, deny, type Verdict } from './verdict.ts';

/** Parse's MISSING_REQUIRED_FIELD and CHANGED_IMMUTABLE_FIELD, used by the _Installation rules. */
export const MISSING_REQUIRED_FIELD = 135;
export const CHANGED_IMMUTABLE_FIELD = 136;

/** `_Role.name` on create: required, `^[0-9A-Za-z_\- ]+$` (139). */
export function roleNameVerdict(name: unknown): Verdict {
  if (typeof name !== 'string' || name === '') {
    return deny('role', ErrorCode.INVALID_ROLE_NAME, 'A role needs a name.', 'name is missing');
  }
  if (!ROLE_NAME_PATTERN.test(name)) {
    return deny(
      'role',
      ErrorCode.INVALID_ROLE_NAME,
      `Invalid role name: ${JSON.stringify(name)}. A role name holds only letters, digits, _, - and spaces.`,
      'name does not match ^[0-9A-Za-z_\\- ]+$',
    );
  }
  return allow('role', 'valid role name');
}

/** `_Role` updates: the name is immutable (even for master). */
export function roleUpdateVerdict(fieldsWritten: readonly string[]): Verdict {
  if (fieldsWritten.includes('name')) {
    return deny(
      'role',
      ErrorCode.INVALID_ROLE_NAME,
      "A role's name can only be set before it has been saved.",
      'name is immutable',
    );
  }
  return allow('role', 'no immutable field written');
}

export const roleCycleDenied = (): Verdict =>
  deny(
    'role',
    ErrorCode.INVALID_ROLE_NAME,
    'A role cannot hold itself, directly or through other roles (cycle in the role graph).',
    'the write would create a cycle',
  );

/**
 * `_Installation` create (SPEC endpoint rule 5): open to anonymous callers; the
 * X-Backend-Installation-Id header supplies `installationId` and, when the body also has one, must
 * match it (master may register any id). `deviceType` and `installationId` are required.
 */
export function installationCreateVerdict(
  auth: Auth,
  body: Record<string, unknown>,
): Verdict & { installationId?: string } {
  const header = auth.installationId;
  const given = body.installationId;
  if (given !== undefined && typeof given !== 'string') {
    return deny('installation', ErrorCode.INCORRECT_TYPE, 'installationId must be a string.', 'bad type');
  }
  if (!auth.isMaster && given !== undefined && header && given !== header) {
    return deny(
      'installation',
      ErrorCode.OPERATION_FORBIDDEN,
      'installationId does not match the X-Backend-Installation-Id header.',
      'the body and the header name different installations',
    );
  }
  const installationId = given ?? header ?? undefined;
  if (!installationId) {
    return deny(
      'installation',
      MISSING_REQUIRED_FIELD,
      'installationId must be specified in this operation.',
      'no installation id in the body or the header',
    );
  }
  if (typeof body.deviceType !== 'string' || body.deviceType === '') {
    return deny(
      'installation',
      MISSING_REQUIRED_FIELD,
      'deviceType must be specified in this operation.',
      'deviceType is required',
    );
  }
  return { ...allow('installation', 'installations are created by their device'), installationId };
}

/** `_Installation` immutable id fields: a write must leave them as stored. */
export const INSTALLATION_IMMUTABLE = ['installationId', 'deviceType'] as const;

export function installationImmutableVerdict(
  stored: Record<string, unknown>,
  written: Record<string, unknown>,
): Verdict {
  for (const field of INSTALLATION_IMMUTABLE) {
    if (field in written && written[field] !== stored[field]) {
      return deny(
        'installation',
        CHANGED_IMMUTABLE_FIELD,
        `${field} may not be changed in this operation.`,
        `${field} is immutable`,
      );
    }
  }
  return allow('installation', 'id fields unchanged');
}
