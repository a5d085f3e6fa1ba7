import { ErrorCode } from '@bds/client/protocol';
import type { FieldDef } from '../kernel/schema.ts';

/**
 * The JSON Schemas of the API document (openapi.ts): the wire form of each field type, the where
 * language, the error answer, and an example value per type for request bodies.
 */

export type Json = Record<string, unknown>;

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const typed = (type: string, props: Json, required: string[]): Json => ({
  type: 'object',
  required: ['__type', ...required],
  properties: { __type: { const: type }, ...props },
});

/** The wire values of docs/protocol.md#wire-values, as schemas. */
export const VALUE_SCHEMAS: Record<string, Json> = {
  Pointer: typed('Pointer', { className: { type: 'string' }, objectId: { type: 'string' } }, [
    'className',
    'objectId',
  ]),
  IncludedObject: {
    type: 'object',
    description: 'A pointer replaced by its row (the include parameter).',
    required: ['__type', 'className', 'objectId'],
    properties: { __type: { const: 'Object' }, className: { type: 'string' }, objectId: { type: 'string' } },
  },
  Relation: typed('Relation', { className: { type: 'string' } }, ['className']),
  Date: typed('Date', { iso: { type: 'string', format: 'date-time' } }, ['iso']),
  File: typed('File', { name: { type: 'string' }, url: { type: 'string' } }, ['name']),
  GeoPoint: typed(
    'GeoPoint',
    {
      latitude: { type: 'number', minimum: -90, maximum: 90 },
      longitude: { type: 'number', minimum: -180, maximum: 180 },
    },
    ['latitude', 'longitude'],
  ),
  Polygon: typed(
    'Polygon',
    {
      coordinates: {
        type: 'array',
        minItems: 3,
        items: { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 },
      },
    },
    ['coordinates'],
  ),
  Bytes: typed('Bytes', { base64: { type: 'string', contentEncoding: 'base64' } }, ['base64']),
  ACL: {
    type: 'object',
    description: 'Keys: `*`, a user id or `role:<Name>`.',
    additionalProperties: {
      type: 'object',
      properties: { read: { type: 'boolean' }, write: { type: 'boolean' } },
      additionalProperties: false,
    },
  },
  Operation: {
    description: 'An operation in a write body (docs/protocol.md#wire-values).',
    oneOf: [
      {
        type: 'object',
        required: ['__op', 'amount'],
        properties: { __op: { const: 'Increment' }, amount: { type: 'number' } },
      },
      {
        type: 'object',
        required: ['__op', 'objects'],
        properties: {
          __op: { enum: ['Add', 'AddUnique', 'Remove', 'AddRelation', 'RemoveRelation'] },
          objects: { type: 'array' },
        },
      },
      {
        type: 'object',
        required: ['__op', 'ops'],
        properties: { __op: { const: 'Batch' }, ops: { type: 'array' } },
      },
      { type: 'object', required: ['__op'], properties: { __op: { const: 'Delete' } } },
    ],
  },
  Error: {
    type: 'object',
    description: 'An error answer (docs/protocol.md#errors).',
    required: ['code', 'error'],
    additionalProperties: false,
    properties: {
      code: { type: 'integer', enum: [...new Set(Object.values(ErrorCode))].sort((a, b) => a - b) },
      error: { type: 'string' },
    },
  },
};

/** The where language (docs/queries.md): field constraints, and the `$or`, `$and`, `$nor`, `$relatedTo` keys. */
const CONSTRAINT_KEYS = [
  '$eq',
  '$ne',
  '$lt',
  '$lte',
  '$gt',
  '$gte',
  '$in',
  '$nin',
  '$all',
  '$containedBy',
  '$exists',
  '$regex',
  '$options',
  '$select',
  '$dontSelect',
  '$inQuery',
  '$notInQuery',
  '$nearSphere',
  '$maxDistance',
  '$maxDistanceInRadians',
  '$maxDistanceInKilometers',
  '$maxDistanceInMiles',
  '$within',
  '$geoWithin',
  '$geoIntersects',
  '$text',
];

export const WHERE_SCHEMAS: Record<string, Json> = {
  Where: {
    type: 'object',
    description:
      "Constraints on fields (a value for equality, or an object of $ operators), combined with $or, $and, $nor; $relatedTo for a relation's rows. A dot path reaches into an Object field. A field hidden from the caller may not be named (119).",
    properties: {
      $or: { type: 'array', items: ref('Where') },
      $and: { type: 'array', items: ref('Where') },
      $nor: { type: 'array', items: ref('Where') },
      $relatedTo: {
        type: 'object',
        required: ['object', 'key'],
        properties: { object: ref('Pointer'), key: { type: 'string' } },
      },
    },
    additionalProperties: {
      anyOf: [ref('Constraint'), { not: { type: 'object' } }, ref('Pointer'), ref('Date')],
    },
  },
  Constraint: {
    type: 'object',
    description: 'Operators on one field (docs/protocol.md#queries).',
    minProperties: 1,
    propertyNames: { enum: CONSTRAINT_KEYS },
  },
};

/** The schema of a value of a field type, as read. */
function valueSchema(def: FieldDef): Json {
  switch (def.type) {
    case 'String':
      return { type: 'string' };
    case 'Number':
      return { type: 'number' };
    case 'Boolean':
      return { type: 'boolean' };
    case 'Object':
      return { type: 'object' };
    case 'Array':
      return { type: 'array' };
    case 'Vector':
      return {
        type: 'array',
        items: { type: 'number' },
        ...(def.dimension ? { minItems: def.dimension, maxItems: def.dimension } : {}),
      };
    case 'Pointer':
      return {
        anyOf: [ref('Pointer'), ref('IncludedObject')],
        ...(def.targetClass ? { description: `Points at ${def.targetClass}.` } : {}),
      };
    case 'Relation':
      return {
        ...ref('Relation'),
        ...(def.targetClass ? { description: `Rows of ${def.targetClass}.` } : {}),
      };
    default:
      return ref(def.type);
  }
}

/** A value as read: the field's type, or null. */
export const readSchema = (def: FieldDef): Json => ({ anyOf: [valueSchema(def), { type: 'null' }] });
/** A value as written: the field's type (a Pointer as a pointer), an operation, or null. */
export const writeSchema = (def: FieldDef): Json => ({
  anyOf: [def.type === 'Pointer' ? ref('Pointer') : valueSchema(def), ref('Operation'), { type: 'null' }],
});

/** An example value of a field, for request bodies (types whose values name something that must exist get none). */
export function exampleOf(def: FieldDef): unknown {
  switch (def.type) {
    case 'String':
      return 'text';
    case 'Number':
      return 1;
    case 'Boolean':
      return true;
    case 'Object':
      return {};
    case 'Array':
      return [];
    case 'Date':
      return { __type: 'Date', iso: '2026-01-01T00:00:00.000Z' };
    case 'GeoPoint':
      return { __type: 'GeoPoint', latitude: 0, longitude: 0 };
    case 'Vector':
      return def.dimension ? Array.from({ length: def.dimension }, () => 0) : undefined;
    default:
      return undefined;
  }
}
