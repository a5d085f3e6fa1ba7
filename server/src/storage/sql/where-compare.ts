import type { Comparison, WireValue } from '../../kernel/query.ts';
import { arrayEqualityOnly, equalityOnly, fieldKind, keyOf, stripGeoType } from '../../query/fields.ts';
import { definedKeys, FALSE, type Operand, TRUE, WhereOperands } from './where-operands.ts';

/**
 * The where compiler's comparisons (`$eq`..`$gte`, `$in`, `$nin`), on typed columns, on JSON
 * keys below an Object field and on array elements; values compare only within one kind.
 */
export class WhereComparisons extends WhereOperands {
  protected compare(op: Operand, cmp: Comparison, value: WireValue): string {
    const type = op.def?.type;
    if (type === 'Array') return this.compareArray(op, cmp, value);
    if (value === null) {
      if (cmp === 'eq') return `${op.sql} IS NULL`;
      if (cmp === 'ne') return `${op.sql} IS NOT NULL`;
      return FALSE;
    }
    if (op.missing) return cmp === 'ne' ? TRUE : FALSE;
    if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
      const encoded = this.params.add(JSON.stringify(stripGeoType(value)));
      const stored = this.dialect.jsonParam(op.sql);
      const given = this.dialect.jsonParam(encoded);
      if (cmp === 'eq') return `${stored} = ${given}`;
      if (cmp === 'ne') return `(${op.sql} IS NULL OR ${stored} <> ${given})`;
      throw equalityOnly(type);
    }
    const key = keyOf(value, type === 'Date');
    // A value of another kind (or a string that is no date, on a Date field) equals nothing.
    if (!key || (op.def && key.kind !== fieldKind(op.def))) return cmp === 'ne' ? TRUE : FALSE;
    if (!op.def) {
      const slot = this.pathSlot(op);
      if (cmp === 'eq') return this.slotIn(slot, [key]);
      if (cmp === 'ne') return `(${this.slotIn(slot, [key])}) IS NOT TRUE`;
      return this.slotOrder(slot, cmp, key);
    }
    const expr = this.columnValue(op);
    if (cmp === 'eq') return `${expr} = ${this.bind(key)}`;
    if (cmp === 'ne') return `(${op.sql} IS NULL OR ${expr} <> ${this.bind(key)})`;
    return this.ordered(expr, cmp, key, op.dates);
  }

  protected compareArray(op: Operand, cmp: Comparison, value: WireValue): string {
    if (Array.isArray(value)) {
      const encoded = this.params.add(JSON.stringify(value));
      const given = this.dialect.jsonParam(encoded);
      if (cmp === 'eq') return `${op.sql} = ${given}`;
      if (cmp === 'ne') return `(${op.sql} IS NULL OR ${op.sql} <> ${given})`;
      throw arrayEqualityOnly();
    }
    if (value === null)
      return cmp === 'eq' ? `${op.sql} IS NULL` : cmp === 'ne' ? `${op.sql} IS NOT NULL` : FALSE;
    const key = keyOf(value);
    if (!key) return cmp === 'ne' ? TRUE : FALSE;
    if (cmp === 'eq') return this.someElement(op, (slot) => this.slotIn(slot, [key]));
    if (cmp === 'ne') return `NOT ${this.someElement(op, (slot) => this.slotIn(slot, [key]))}`;
    // Ordering operators on an array match when any element satisfies them.
    return this.someElement(op, (slot) => this.slotOrder(slot, cmp, key));
  }

  /** `$in` (`not`: `$nin`, exactly the rows `$in` leaves out). A null in the list matches rows without the value. */
  protected inList(op: Operand, values: WireValue[], not: boolean): string {
    const includesNull = values.includes(null);
    const matches = op.missing
      ? includesNull
        ? TRUE
        : FALSE
      : this.anyOf(
          op,
          values.filter((v) => v !== null),
          includesNull,
        );
    if (!not) return matches;
    return matches === TRUE ? FALSE : matches === FALSE ? TRUE : `(${matches}) IS NOT TRUE`;
  }

  protected anyOf(op: Operand, values: WireValue[], includesNull: boolean): string {
    const parts = includesNull ? [`${op.sql} IS NULL`] : [];
    const type = op.def?.type;
    if (type === 'Array') {
      const keys = definedKeys(values.map((v) => keyOf(v)));
      if (keys.length) parts.push(this.someElement(op, (slot) => this.slotIn(slot, keys)));
    } else if (type === 'GeoPoint' || type === 'Polygon' || type === 'Object') {
      const given = values.map((v) =>
        this.dialect.jsonParam(this.params.add(JSON.stringify(stripGeoType(v)))),
      );
      if (given.length) parts.push(`${this.dialect.jsonParam(op.sql)} IN (${given.join(', ')})`);
    } else if (!op.def) {
      const keys = definedKeys(values.map((v) => keyOf(v)));
      if (keys.length) parts.push(this.slotIn(this.pathSlot(op), keys));
    } else {
      const kind = fieldKind(op.def);
      const keys = definedKeys(values.map((v) => keyOf(v, type === 'Date'))).filter((k) => k.kind === kind);
      if (keys.length) parts.push(`${this.columnValue(op)} IN (${keys.map((k) => this.bind(k)).join(', ')})`);
    }
    if (parts.length === 0) return FALSE;
    return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
  }
}
