import { invalidQuery } from '../../kernel/errors.ts';
import type { Path, QueryNode, TextSearch } from '../../kernel/query.ts';
import type { OrderKey } from '../../kernel/records.ts';
import type { ClassSchema, FieldDef } from '../../kernel/schema.ts';
import { ELEMENT, ELEMENT_SCHEMA, type ElementCondition, elementCondition } from '../../query/elements.ts';
import {
  checkArrayField,
  checkRegexField,
  checkTextField,
  keyOf,
  queryFieldDef,
  type RelationMembership,
  relationMembership,
} from '../../query/fields.ts';
import { TEXT_SCORE_KEY, textSpecJson } from '../../query/text.ts';
import { Params } from './dialect.ts';
import { joinTableName } from './names.ts';
import { definedKeys, FALSE, TRUE } from './where-operands.ts';
import { WhereSubqueries } from './where-subquery.ts';

/**
 * Compiles the query AST to a SQL boolean expression for one dialect. It knows nothing of callers:
 * access rules arrive as nodes of the AST (`acl`, pointer-permission conditions), also inside
 * subqueries ($inQuery, $select, ...), where the data layer puts them.
 *
 * Its answers are those of the in-memory matcher (query/match.ts): values compare only within one
 * kind (`keyOf`), so a typed column meets a value of another kind as a constant (and plain
 * `column op ?` otherwise, which an index serves), and a JSON sub-key or array element checks the
 * stored JSON type first. A condition may be NULL (unknown) on a row without the value; a
 * negation of one that may be is `IS NOT TRUE`, so unknown counts as false, as the matcher's
 * absent value does.
 * Parameters are positional: each is added exactly when its placeholder enters the text.
 *
 * Built in layers, each a file: operands and JSON slots (where-operands.ts), comparisons
 * (where-compare.ts), geo operators (where-geo.ts), subqueries (where-subquery.ts); this last one
 * adds the logical operators, relations, ACLs, `$text` and ORDER BY.
 */
export class WhereCompiler extends WhereSubqueries {
  /** The first `$text` of the query (outside subqueries): what `order=$score` sorts by. */
  private textOrder: { value: string; search: TextSearch } | undefined;

  compile(node: QueryNode, schema: ClassSchema, alias: string): string {
    const q = (s: string) => this.dialect.quote(s);
    const elements = elementCondition(schema, node);
    if (elements) return this.elementsHold(schema, alias, elements);
    switch (node.type) {
      case 'and':
        if (node.children.length === 0) return TRUE;
        return node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' AND ');
      case 'or':
        if (node.children.length === 0) return FALSE;
        return node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' OR ');
      case 'nor':
        if (node.children.length === 0) return TRUE;
        return `(${node.children.map((c) => `(${this.compile(c, schema, alias)})`).join(' OR ')}) IS NOT TRUE`;
      case 'compare':
      case 'in': {
        const membership = relationMembership(schema, node);
        if (membership) return this.relationHolds(schema, alias, membership);
        if (node.type === 'in')
          return this.inList(this.operand(schema, alias, node.path), node.values, node.not);
        return this.compare(this.operand(schema, alias, node.path), node.op, node.value);
      }
      case 'all': {
        const op = this.operand(schema, alias, node.path);
        checkArrayField(op.def, node.path, '$all');
        if (node.values.length === 0) return TRUE;
        const keys = node.values.map((v) => keyOf(v));
        // A null in the list matches nothing: no element equals it.
        if (keys.some((k) => k === undefined)) return FALSE;
        return keys.map((k) => this.someElement(op, (slot) => this.slotIn(slot, [k!]))).join(' AND ');
      }
      case 'containedBy': {
        const op = this.operand(schema, alias, node.path);
        checkArrayField(op.def, node.path, '$containedBy');
        // A null element is outside any list; a null in the list admits nothing.
        const keys = definedKeys(node.values.map((v) => keyOf(v)));
        return this.everyElement(op, (slot) => (keys.length ? this.slotIn(slot, keys) : FALSE));
      }
      case 'exists': {
        const op = this.operand(schema, alias, node.path);
        if (op.def?.type === 'Relation')
          throw invalidQuery(`Invalid where: $exists cannot test relation ${node.path[0]}.`);
        return node.exists ? `${op.sql} IS NOT NULL` : `${op.sql} IS NULL`;
      }
      case 'regex': {
        const op = this.operand(schema, alias, node.path);
        checkRegexField(op.def, node.path);
        if (op.missing) return FALSE;
        // Below an Object only a string is read: an object there would read as its JSON text.
        const guard = op.def ? '' : `${this.dialect.jsonTypeIn(this.pathSlot(op).type, ['string'])} AND `;
        return `${guard}${this.dialect.regexMatch(op.sql, this.params.add(node.source), this.params.add(node.flags))}`;
      }
      case 'inQuery':
        return this.inQuery(schema, alias, node.path, node.query, node.not);
      case 'select':
        return this.select(schema, alias, node.path, node.query, node.key, node.not);
      case 'relatedTo': {
        const owner = this.lookup(node.owner.className);
        const rel = owner?.fields[node.key];
        if (!owner || rel?.type !== 'Relation' || rel.targetClass !== schema.className) return FALSE;
        return `${alias}.${q('objectId')} IN (SELECT ${q('relatedId')} FROM ${q(joinTableName(owner.className, node.key))} WHERE ${q('owningId')} = ${this.params.add(node.owner.objectId)})`;
      }
      case 'nearSphere':
        return this.nearSphere(schema, alias, node);
      case 'withinBox':
        return this.withinBox(schema, alias, node);
      case 'withinPolygon':
        return this.withinPolygon(schema, alias, node);
      case 'withinCenterSphere':
        return this.withinCenterSphere(schema, alias, node);
      case 'acl':
        return this.acl(alias, node.access, node.principals);
      case 'text': {
        const op = this.operand(schema, alias, node.path);
        checkTextField(op.def, node.path);
        if (op.missing) return FALSE;
        // Below an Object only a string is read, as for $regex.
        const guard = op.def ? '' : `${this.dialect.jsonTypeIn(this.pathSlot(op).type, ['string'])} AND `;
        if (this.subqueryLevel === 0) this.textOrder ??= { value: op.sql, search: node.search };
        return `${guard}${this.dialect.textScore(op.sql, this.params.add(textSpecJson(node.search)))} > 0`;
      }
      case 'intersectsPoint':
        return this.intersectsPoint(schema, alias, node);
    }
  }

  /**
   * A condition on the elements of an Array field (a dot path into it; query/elements.ts): each
   * term an EXISTS over the elements, each element read as an Object field `ELEMENT` when it is an
   * object (NULL otherwise), so that its keys are compared as keys below an Object are.
   */
  private elementsHold(schema: ClassSchema, alias: string, condition: ElementCondition): string {
    const array = this.operand(schema, alias, [condition.field]);
    const parts = condition.terms.map(({ none, test }) => {
      const el = this.dialect.jsonElements(array.column, this.nextAlias('e'));
      const row = this.nextAlias('e');
      const objects =
        `(SELECT CASE WHEN ${this.dialect.jsonTypeIn(el.type, ['object'])} THEN ${el.json} END ` +
        `AS ${this.dialect.quote(ELEMENT)} FROM ${el.from}) AS ${row}`;
      const some = `EXISTS (SELECT 1 FROM ${objects} WHERE ${this.compile(test, ELEMENT_SCHEMA, row)})`;
      return none ? `NOT ${some}` : some;
    });
    if (parts.length === 0) return condition.all ? TRUE : FALSE;
    return parts.map((p) => `(${p})`).join(condition.all ? ' AND ' : ' OR ');
  }

  /** Rows whose relation holds one of the related ids (`not`: none of them), read from its join table. */
  private relationHolds(schema: ClassSchema, alias: string, m: RelationMembership): string {
    if (m.relatedIds.length === 0) return m.not ? TRUE : FALSE;
    const q = (s: string) => this.dialect.quote(s);
    const ids = m.relatedIds.map((id) => this.params.add(id)).join(', ');
    const owners = `SELECT ${q('owningId')} FROM ${q(joinTableName(schema.className, m.field))} WHERE ${q('relatedId')} IN (${ids})`;
    return `${alias}.${q('objectId')} ${m.not ? 'NOT IN' : 'IN'} (${owners})`;
  }

  /** Rows with no ACL, or whose ACL grants `access` to one of `principals` (the rule of kernel/acl.ts). */
  private acl(alias: string, access: 'read' | 'write', principals: readonly string[]): string {
    return this.aclMatch(
      `${alias}.${this.dialect.quote(access === 'read' ? '_rperm' : '_wperm')}`,
      principals,
    );
  }

  /** A stored principal list (a column, or the counts table's key) is absent, or names one of `principals`. */
  aclMatch(column: string, principals: readonly string[]): string {
    if (principals.length === 0) return `${column} IS NULL`;
    return `(${column} IS NULL OR ${this.dialect.principalsContain(column, principals, (v) => this.params.add(v))})`;
  }

  orderBy(schema: ClassSchema, alias: string, order: OrderKey[]): string[] {
    const parts: string[] = [];
    for (const key of order) {
      if (key.path[0] === TEXT_SCORE_KEY) {
        // The best match first, whichever way it is asked (as the incumbent sorts it); nothing
        // to sort by without a $text.
        if (this.textOrder) {
          const spec = this.params.add(textSpecJson(this.textOrder.search));
          parts.push(`${this.dialect.textScore(this.textOrder.value, spec)} DESC`);
        }
        continue;
      }
      const def = queryFieldDef(schema, key.path[0]!);
      if (!def || def.type === 'Relation' || def.type === 'ACL') continue;
      const op = this.operand(schema, alias, key.path);
      parts.push(`${op.sql} ${key.descending ? 'DESC' : 'ASC'}`);
    }
    return parts;
  }

  /**
   * The SQL expression of a field path and the field's type (aggregation reads values with it).
   * Not named `valueOf`: that would shadow Object.prototype.valueOf.
   */
  fieldValue(schema: ClassSchema, alias: string, path: Path): { sql: string; def: FieldDef | undefined } {
    const op = this.operand(schema, alias, path);
    return { sql: op.sql, def: op.def };
  }

  /** By a compiler of its own, whose parameters are dropped (see WhereSubqueries.check). */
  protected override check(where: QueryNode, inner: ClassSchema): void {
    new WhereCompiler(this.dialect, new Params(this.dialect.placeholder), this.lookup).compile(
      where,
      inner,
      'x',
    );
  }
}
