/** Field types a schema may declare (PROTOCOL.md "Wire values"); Pointer and Relation take a targetClass. */
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
] as const;

export type SchemaFieldType = (typeof SCHEMA_FIELD_TYPES)[number];
