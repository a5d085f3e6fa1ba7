import { randomBytes } from 'node:crypto';
import { MASTER } from '../../src/kernel/caller.ts';
import { newObjectId } from '../../src/kernel/ids.ts';
import type { TestService } from './service.ts';

/**
 * Test fixtures for the access-control suites. Users and sessions are written through the write
 * pipeline with the master key (no password hashing, so fixtures stay fast): a _User row ACL'd to
 * itself and a _Session row whose token the service resolves like any other. Roles go through the
 * REST API with the master key.
 */
export interface TestUser {
  id: string;
  token: string;
  username: string;
}

export const pointer = (className: string, objectId: string) => ({ __type: 'Pointer', className, objectId });

export async function createUser(t: TestService, username?: string): Promise<TestUser> {
  const { writes } = t.service.data;
  const ctx = { caller: MASTER, source: 'account' as const, context: {} };
  const id = newObjectId();
  const name = username ?? `u_${id.toLowerCase()}`;
  await writes.create(
    ctx,
    '_User',
    { username: name, ACL: { '*': { read: true }, [id]: { write: true } } },
    { objectId: id },
  );
  const token = `r:${randomBytes(16).toString('hex')}`;
  await writes.create(ctx, '_Session', {
    user: pointer('_User', id),
    sessionToken: token,
    expiresAt: { __type: 'Date', iso: new Date(Date.now() + 3_600_000).toISOString() },
    ACL: { [id]: { read: true, write: true } },
  });
  return { id, token, username: name };
}

/** A role through REST with the master key; `users` and `roles` are object ids. */
export async function createRole(
  t: TestService,
  name: string,
  members: { users?: string[]; roles?: string[] } = {},
): Promise<string> {
  const body: Record<string, unknown> = { name, ACL: { '*': { read: true } } };
  if (members.users?.length)
    body.users = { __op: 'AddRelation', objects: members.users.map((id) => pointer('_User', id)) };
  if (members.roles?.length)
    body.roles = { __op: 'AddRelation', objects: members.roles.map((id) => pointer('_Role', id)) };
  const res = await t.request('POST', '/roles', { as: 'master', body });
  if (res.status !== 201) throw new Error(`role ${name}: ${res.text}`);
  return res.json.objectId as string;
}

export async function setClp(t: TestService, className: string, clp: Record<string, unknown>): Promise<void> {
  const res = await t.request('PUT', `/schemas/${className}`, {
    as: 'master',
    body: { classLevelPermissions: clp },
  });
  if (res.status !== 200) throw new Error(`CLP of ${className}: ${res.text}`);
}

export async function createClass(
  t: TestService,
  className: string,
  fields: Record<string, unknown>,
  clp?: Record<string, unknown>,
): Promise<void> {
  const body: Record<string, unknown> = { className, fields };
  if (clp) body.classLevelPermissions = clp;
  const res = await t.request('POST', `/schemas/${className}`, { as: 'master', body });
  if (res.status !== 200 && res.status !== 201) throw new Error(`class ${className}: ${res.text}`);
}

export async function createRow(
  t: TestService,
  className: string,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`row of ${className}: ${res.text}`);
  return res.json.objectId as string;
}

/** After writing role rows or join tables straight through the store. */
export const forgetRoles = (t: TestService) => t.service.callers.forgetAll();
