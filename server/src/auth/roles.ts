import type { Auth } from '../data/auth.ts';
import type { StorageAdapter } from '../storage/adapter.ts';

/** Upper bound of cached users; past it the cache starts over (it is only a cache). */
const MAX_CACHED_USERS = 10_000;

/**
 * A user's effective roles: one recursive query over the `_Role` join tables, cached per user.
 * Any change to `_Role` (rows or their `users`/`roles` relations) invalidates the whole cache; a
 * rolled-back transaction does too, so the cache never holds a graph that was not committed.
 */
export class RoleResolver {
  private cache = new Map<string, readonly string[]>();
  private generation = 0;

  constructor(private readonly store: StorageAdapter) {
    store.onRollback(async () => this.invalidate());
  }

  invalidate(): void {
    this.cache.clear();
    this.generation++;
  }

  async rolesOf(userId: string): Promise<readonly string[]> {
    const hit = this.cache.get(userId);
    if (hit) return hit;
    const generation = this.generation;
    const names = Object.freeze([...new Set(await this.store.roleNamesOf(userId))].sort());
    // A change that landed while the query ran may not be in its answer: do not keep it then.
    if (generation === this.generation) {
      if (this.cache.size >= MAX_CACHED_USERS) this.cache.clear();
      this.cache.set(userId, names);
    }
    return names;
  }
}

const resolvers = new WeakMap<StorageAdapter, RoleResolver>();

export function roleResolver(store: StorageAdapter): RoleResolver {
  let resolver = resolvers.get(store);
  if (!resolver) {
    resolver = new RoleResolver(store);
    resolvers.set(store, resolver);
  }
  return resolver;
}

/** The caller with its roles resolved (master and anonymous callers hold none). */
export async function withRoles(store: StorageAdapter, auth: Auth): Promise<Auth> {
  if (auth.isMaster || !auth.user || auth.roles) return auth;
  return { ...auth, roles: await roleResolver(store).rolesOf(auth.user.objectId) };
}

export const ROLE_NAME_PATTERN = /^[0-9A-Za-z_\- ]+$/;
