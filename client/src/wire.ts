/** Wire-protocol constants, from the shared protocol package (credential-free). */
export {
  type AuditEntry,
  ErrorCode,
  FIELD_TYPES,
  type FieldType,
  HEADERS,
  SCHEMA_FIELD_TYPES,
  type SchemaFieldType,
} from './protocol/index.ts';
