import type { QueryNode } from '../kernel/query.ts';
import type { Row } from '../kernel/records.ts';
import type { HeldRole } from '../storage/adapter.ts';
import type { Core } from './core.ts';

/**
 * Reads the service makes for itself, with no caller and no access layer: resolving a session
 * token, a user's roles, the account rules' own lookups. Nothing here is reachable by a request
 * without the code that calls it applying its own rules.
 */
export class Lookups {
  constructor(private readonly core: Core) {}

  private async first(className: string, where: QueryNode, limit = 1): Promise<Row[]> {
    const schema = this.core.schemas.get(className);
    if (!schema) return [];
    return this.core.store.find(schema, { where, order: [], limit, skip: 0 }, this.core.schemas.lookup);
  }

  /** The `_Session` row holding `token`. */
  async sessionByToken(token: string): Promise<Row | undefined> {
    if (!token) return undefined;
    return (
      await this.first('_Session', { type: 'compare', path: ['sessionToken'], op: 'eq', value: token })
    )[0];
  }

  /** A user's sessions (only those of `installationId` when given). */
  sessionsOf(userId: string, installationId?: string): Promise<Row[]> {
    const children: QueryNode[] = [
      {
        type: 'compare',
        path: ['user'],
        op: 'eq',
        value: { __type: 'Pointer', className: '_User', objectId: userId },
      },
    ];
    if (installationId)
      children.push({ type: 'compare', path: ['installationId'], op: 'eq', value: installationId });
    return this.first('_Session', { type: 'and', children }, 100_000);
  }

  /** A `_User` row as stored (every field, password excluded by the schema's own rules elsewhere). */
  async userById(objectId: string): Promise<Row | undefined> {
    return (await this.first('_User', { type: 'compare', path: ['objectId'], op: 'eq', value: objectId }))[0];
  }

  /** The objectIds of the users linked to a provider's id (`authData.<provider>.id`), two at most. */
  async usersByAuthId(provider: string, id: string): Promise<string[]> {
    const where: QueryNode = { type: 'compare', path: ['authData', provider, 'id'], op: 'eq', value: id };
    return (await this.first('_User', where, 2)).map((row) => row.objectId as string);
  }

  /** `objectId` and the internal columns of the rows of `className` whose `column` equals `value`. */
  internal(
    className: string,
    column: string,
    value: unknown,
    columns: string[],
  ): Promise<Array<Record<string, unknown>>> {
    return this.core.store.findInternal(className, column, value, columns);
  }

  rolesOf(userId: string): Promise<HeldRole[]> {
    return this.core.store.rolesOf(userId);
  }
}
