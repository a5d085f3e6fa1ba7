import type { HeldRole, RelationMember, RelationStorage } from '../adapter.ts';
import { joinTableName } from './names.ts';
import { SqlStorePart, wholeNumber } from './store-part.ts';

/** Reads of Relation fields' join tables: roles held through roles, and members page by page. */
export class SqlRelations extends SqlStorePart implements RelationStorage {
  async rolesOf(userId: string): Promise<HeldRole[]> {
    const p = this.params();
    const users = this.q(joinTableName('_Role', 'users'));
    const roles = this.q(joinTableName('_Role', 'roles'));
    const [owning, related] = [this.q('owningId'), this.q('relatedId')];
    // held(id, via): the roles the user is a member of (via NULL), then every role whose `roles`
    // relation holds a held role (via that role). UNION drops rows already seen, so a cycle in the
    // graph still terminates.
    const sql =
      `WITH RECURSIVE held(id, via) AS (SELECT ${owning}, NULL FROM ${users} WHERE ${related} = ${p.add(userId)} ` +
      `UNION SELECT j.${owning}, held.id FROM ${roles} AS j JOIN held ON j.${related} = held.id) ` +
      `SELECT r.${this.q('name')} AS name, v.${this.q('name')} AS via FROM held ` +
      `JOIN ${this.table('_Role')} AS r ON r.${this.q('objectId')} = held.id ` +
      `LEFT JOIN ${this.table('_Role')} AS v ON v.${this.q('objectId')} = held.via ` +
      `WHERE r.${this.q('name')} IS NOT NULL`;
    const held = new Map<string, HeldRole>();
    for (const r of await this.driver.all(sql, p.values)) {
      const name = String(r.name);
      const via = r.via === null || r.via === undefined ? null : String(r.via);
      // A role reached on several paths is listed once; direct membership is the shortest chain.
      if (!held.has(name) || via === null) held.set(name, { name, via });
    }
    return [...held.values()];
  }

  async rolesContain(roleIds: string[], targetRoleId: string): Promise<boolean> {
    if (roleIds.length === 0) return false;
    if (roleIds.includes(targetRoleId)) return true;
    const p = this.params();
    const roles = this.q(joinTableName('_Role', 'roles'));
    const [owning, related] = [this.q('owningId'), this.q('relatedId')];
    const start = roleIds.map((id) => p.add(id)).join(', ');
    const sql =
      `WITH RECURSIVE below(id) AS (SELECT ${related} FROM ${roles} WHERE ${owning} IN (${start}) ` +
      `UNION SELECT j.${related} FROM ${roles} AS j JOIN below ON j.${owning} = below.id) ` +
      `SELECT 1 AS hit FROM below WHERE id = ${p.add(targetRoleId)} LIMIT 1`;
    return (await this.driver.get(sql, p.values)) !== undefined;
  }

  async relationMembers(
    className: string,
    field: string,
    after: RelationMember | null,
    limit: number,
  ): Promise<RelationMember[]> {
    const p = this.params();
    const [owning, related] = [this.q('owningId'), this.q('relatedId')];
    let where = '';
    if (after) {
      // Placeholders are positional: added in the order they appear in the text.
      const a = p.add(after.owningId);
      const b = p.add(after.owningId);
      const c = p.add(after.relatedId);
      where = ` WHERE ${owning} > ${a} OR (${owning} = ${b} AND ${related} > ${c})`;
    }
    const rows = await this.driver.all(
      `SELECT ${owning}, ${related} FROM ${this.q(joinTableName(className, field))}${where} ` +
        `ORDER BY ${owning}, ${related} LIMIT ${wholeNumber(limit)}`,
      p.values,
    );
    return rows.map((r) => ({ owningId: String(r.owningId), relatedId: String(r.relatedId) }));
  }
}
