/** Field types a schema may declare (docs/protocol.md#wire-values); Pointer and Relation take a targetClass. */
export const SCHEMA_FIELD_TYPES = [
  'String',
  'Number',
  'Boolean',
  'Date',
  'Object',
  'Array',
  'GeoPoint',
  'File',
  'Bytes',
  'Polygon',
  'Pointer',
  'Relation',
  /** A fixed-dimension vector of numbers, stored as binary float32 (`dimension` in the field). */
  'Vector',
] as const;

export type SchemaFieldType = (typeof SCHEMA_FIELD_TYPES)[number];

/** Every type a field of a schema document can have: the declarable ones plus the built-in `ACL`. */
export type FieldType = SchemaFieldType | 'ACL';

export const FIELD_TYPES: readonly FieldType[] = [...SCHEMA_FIELD_TYPES, 'ACL'];
