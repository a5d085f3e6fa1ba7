import { BASE64_PATTERN, foreignFileNameText, isIssuedFileName, isObject } from '@bds/client/protocol';
import { BdsError, ErrorCode, incorrectType } from '../kernel/errors.ts';
import { isValidClassName } from '../kernel/names.ts';
import type { FieldDef } from '../kernel/schema.ts';
import { closedRing } from '../query/geo.ts';
import { normaliseIso } from '../query/parse.ts';

export { describeType, sameType, typeMismatch } from '../kernel/schema.ts';

/** The type a plain (non-operation) wire value gives a new field. */
export function typeOfValue(value: unknown, field: string): FieldDef {
  if (typeof value === 'string') return { type: 'String' };
  if (typeof value === 'number') return { type: 'Number' };
  if (typeof value === 'boolean') return { type: 'Boolean' };
  if (Array.isArray(value)) return { type: 'Array' };
  if (!isObject(value)) throw incorrectType(`Unsupported value for ${field}.`);
  switch (value.__type) {
    case undefined:
      return { type: 'Object' };
    case 'Date':
      return { type: 'Date' };
    case 'Pointer':
      return { type: 'Pointer', targetClass: value.className as string };
    case 'Relation':
      return { type: 'Relation', targetClass: value.className as string };
    case 'GeoPoint':
      return { type: 'GeoPoint' };
    case 'File':
      return { type: 'File' };
    case 'Bytes':
      return { type: 'Bytes' };
    case 'Polygon':
      return { type: 'Polygon' };
    default:
      throw incorrectType(`Unknown __type ${JSON.stringify(value.__type)} for ${field}.`);
  }
}

/** Checks a typed wire value's shape and returns it normalised (dates in canonical ISO form). */
export function normaliseValue(value: unknown, field: string): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw incorrectType(`${field} must be a finite number.`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => normaliseValue(v, field));
  if (!isObject(value)) throw incorrectType(`Unsupported value for ${field}.`);
  switch (value.__type) {
    case undefined: {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        if (k.startsWith('$') || k.includes('.')) {
          throw new BdsError(
            ErrorCode.INVALID_KEY_NAME,
            `Nested keys should not contain the '$' or '.' characters (${field}.${k}).`,
          );
        }
        if (k === '__op')
          throw incorrectType(`Operation ${JSON.stringify(v)} is not allowed inside ${field}.`);
        out[k] = normaliseValue(v, field);
      }
      return out;
    }
    case 'Date': {
      const iso = normaliseIso(value.iso);
      if (!iso) throw incorrectType(`${field} has a Date whose iso is not an ISO 8601 date.`);
      return { __type: 'Date', iso };
    }
    case 'Pointer': {
      const { className, objectId } = value;
      if (
        typeof className !== 'string' ||
        !isValidClassName(className) ||
        typeof objectId !== 'string' ||
        !objectId
      ) {
        throw new BdsError(ErrorCode.INVALID_POINTER, `${field} holds a malformed pointer.`);
      }
      return { __type: 'Pointer', className, objectId };
    }
    case 'Relation': {
      if (typeof value.className !== 'string' || !isValidClassName(value.className)) {
        throw incorrectType(`${field} holds a Relation without a valid className.`);
      }
      return { __type: 'Relation', className: value.className };
    }
    case 'GeoPoint': {
      const { latitude, longitude } = value;
      if (typeof latitude !== 'number' || typeof longitude !== 'number') {
        throw incorrectType(`${field} holds a GeoPoint without numeric latitude and longitude.`);
      }
      if (latitude < -90 || latitude > 90 || longitude < -180 || longitude > 180) {
        throw incorrectType(
          `${field} holds a GeoPoint out of range (latitude -90..90, longitude -180..180).`,
        );
      }
      return { __type: 'GeoPoint', latitude, longitude };
    }
    case 'File': {
      if (typeof value.name !== 'string' || !value.name)
        throw incorrectType(`${field} holds a File without a name.`);
      // Only names this service issued: a url or a made-up name would have readers fetch it.
      if (!isIssuedFileName(value.name))
        throw new BdsError(ErrorCode.INVALID_FILE_NAME, foreignFileNameText(value.name, field));
      // A caller's url is dropped: urls are built from the name when the row is read.
      return { __type: 'File', name: value.name };
    }
    case 'Bytes': {
      if (typeof value.base64 !== 'string' || !BASE64_PATTERN.test(value.base64)) {
        throw incorrectType(`${field} holds Bytes without valid base64.`);
      }
      return { __type: 'Bytes', base64: value.base64 };
    }
    case 'Polygon': {
      const coords = value.coordinates;
      const ok =
        Array.isArray(coords) &&
        coords.length >= 3 &&
        coords.every(
          (c) =>
            Array.isArray(c) &&
            c.length === 2 &&
            typeof c[0] === 'number' &&
            typeof c[1] === 'number' &&
            Math.abs(c[0]) <= 90 &&
            Math.abs(c[1]) <= 180,
        );
      if (!ok)
        throw incorrectType(`${field} holds a Polygon that needs at least 3 [latitude, longitude] pairs.`);
      return { __type: 'Polygon', coordinates: closedRing(coords as number[][]) };
    }
    default:
      throw incorrectType(`Unknown __type ${JSON.stringify(value.__type)} for ${field}.`);
  }
}

/** A value for a `Vector` field: exactly `dimension` finite numbers (111 otherwise). */
export function checkVector(value: unknown, field: string, dimension: number): number[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    throw incorrectType(`${field} is a Vector; it takes an array of ${dimension} numbers.`);
  }
  if (value.length !== dimension) {
    throw incorrectType(`${field} is a Vector of dimension ${dimension}; got ${value.length} numbers.`);
  }
  return value as number[];
}
