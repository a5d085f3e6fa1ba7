import { isObject } from '@bds/client/protocol';
import { BdsError, ErrorCode, invalidQuery } from '../kernel/errors.ts';
import { isValidClassName, keyPathProblem } from '../kernel/names.ts';
import {
  type Comparison,
  EARTH_RADIUS_KM,
  EARTH_RADIUS_MILES,
  type GeoPointValue,
  type Path,
  type PointerValue,
  type QueryNode,
  type SubQuery,
  type WireValue,
} from '../kernel/query.ts';
import { closedRing } from './geo.ts';
import { MAX_REGEX_LENGTH, prepareRegex, type RegexSpec, RegexTooLarge } from './regex.ts';
import { parseTextSearch } from './text.ts';

export interface QueryLimits {
  /** Nesting of $and/$or/$nor; -1 or undefined: no limit. */
  queryDepth?: number;
  /** Nesting of $inQuery/$notInQuery/$select/$dontSelect; -1 or undefined: no limit. */
  subqueryDepth?: number;
}

export { MAX_REGEX_LENGTH };

const COMPARISONS: Record<string, Comparison> = {
  $eq: 'eq',
  $ne: 'ne',
  $lt: 'lt',
  $lte: 'lte',
  $gt: 'gt',
  $gte: 'gte',
};

/**
 * A key of a where that can name no field (`$foo`, `_password`, `a-b`): 105, as the incumbent
 * answers (the SDKs test for it); every other problem of a where is a 102.
 */
const invalidKeyName = (message: string) => new BdsError(ErrorCode.INVALID_KEY_NAME, message);

/** A malformed geometry operand of `$geoWithin` (`withinPolygon`): 107, as the incumbent answers. */
const invalidGeometry = (message: string) => new BdsError(ErrorCode.INVALID_JSON, message);

/** Parses a `where` JSON value into the query AST; any problem is a 102 with a clear text (105, 107: see above). */
export function parseWhere(where: unknown, limits: QueryLimits = {}): QueryNode {
  return new WhereParser(limits).parseRoot(where, 0);
}

class WhereParser {
  constructor(private readonly limits: QueryLimits) {}

  parseRoot(where: unknown, subqueryLevel: number): QueryNode {
    if (!isObject(where)) throw invalidQuery('Invalid where: it must be a JSON object.');
    return this.parseObject(where, 0, subqueryLevel);
  }

  private parseObject(where: Record<string, unknown>, depth: number, sub: number): QueryNode {
    const children: QueryNode[] = [];
    for (const [key, value] of Object.entries(where)) {
      if (key === '$and' || key === '$or' || key === '$nor') {
        children.push(this.parseLogical(key, value, depth + 1, sub));
      } else if (key === '$relatedTo') {
        children.push(parseRelatedTo(value));
      } else if (key.startsWith('$')) {
        throw invalidKeyName(`Invalid where: unknown top-level operator ${key}.`);
      } else {
        children.push(...this.parseField(key, value, sub));
      }
    }
    return children.length === 1 ? children[0]! : { type: 'and', children };
  }

  private parseLogical(op: '$and' | '$or' | '$nor', value: unknown, depth: number, sub: number): QueryNode {
    const max = this.limits.queryDepth;
    if (max !== undefined && max >= 0 && depth > max) {
      throw invalidQuery(`Query condition nesting depth of ${depth} exceeds the maximum of ${max}.`);
    }
    if (!Array.isArray(value) || value.length === 0) {
      throw invalidQuery(`Invalid where: ${op} takes a non-empty array of conditions.`);
    }
    const children = value.map((item) => {
      if (!isObject(item)) throw invalidQuery(`Invalid where: every ${op} member must be an object.`);
      return this.parseObject(item, depth, sub);
    });
    const type = op === '$and' ? 'and' : op === '$or' ? 'or' : 'nor';
    return { type, children };
  }

  private parseField(key: string, value: unknown, sub: number): QueryNode[] {
    const problem = keyPathProblem(key);
    if (problem) throw invalidKeyName(`Invalid where: invalid key name ${JSON.stringify(key)} (${problem}).`);
    const path: Path = key.split('.');
    if (!isOperatorObject(value)) {
      return [{ type: 'compare', path, op: 'eq', value: parseValue(value, key) }];
    }
    const constraints = value as Record<string, unknown>;
    const nodes: QueryNode[] = [];
    const handled = new Set<string>();
    for (const [op, operand] of Object.entries(constraints)) {
      if (handled.has(op)) continue;
      const comparison = COMPARISONS[op];
      if (comparison) {
        nodes.push({ type: 'compare', path, op: comparison, value: parseValue(operand, key) });
        continue;
      }
      switch (op) {
        case '$in':
        case '$nin':
          nodes.push({ type: 'in', path, values: parseArray(operand, op, key), not: op === '$nin' });
          break;
        case '$all':
          nodes.push({ type: 'all', path, values: parseArray(operand, op, key) });
          break;
        case '$containedBy':
          nodes.push({ type: 'containedBy', path, values: parseArray(operand, op, key) });
          break;
        case '$exists':
          if (typeof operand !== 'boolean')
            throw invalidQuery(`Invalid where: $exists on ${key} takes a boolean.`);
          nodes.push({ type: 'exists', path, exists: operand });
          break;
        case '$regex':
          nodes.push(parseRegex(path, key, operand, constraints.$options));
          handled.add('$options');
          break;
        case '$options':
          if (!('$regex' in constraints))
            throw invalidQuery(`Invalid where: $options on ${key} needs $regex.`);
          break;
        case '$select':
        case '$dontSelect':
          nodes.push(this.parseSelect(path, key, op, operand, sub));
          break;
        case '$inQuery':
        case '$notInQuery':
          nodes.push({
            type: 'inQuery',
            path,
            query: this.parseSubQuery(operand, op, key, sub + 1),
            not: op === '$notInQuery',
          });
          break;
        case '$nearSphere':
          nodes.push(parseNearSphere(path, key, constraints));
          for (const k of MAX_DISTANCE_KEYS) handled.add(k);
          break;
        case '$maxDistance':
        case '$maxDistanceInRadians':
        case '$maxDistanceInMiles':
        case '$maxDistanceInKilometers':
          if (!('$nearSphere' in constraints))
            throw invalidQuery(`Invalid where: ${op} on ${key} needs $nearSphere.`);
          break;
        case '$within':
          nodes.push(parseWithin(path, key, operand));
          break;
        case '$geoWithin':
          nodes.push(parseGeoWithin(path, key, operand));
          break;
        case '$geoIntersects':
          nodes.push(parseGeoIntersects(path, key, operand));
          break;
        case '$text':
          nodes.push({ type: 'text', path, search: parseTextSearch(operand) });
          break;
        default:
          throw invalidQuery(`Invalid where: unknown operator ${op} on ${key}.`);
      }
    }
    return nodes;
  }

  private parseSelect(path: Path, key: string, op: string, operand: unknown, sub: number): QueryNode {
    if (!isObject(operand) || typeof operand.key !== 'string' || !isObject(operand.query)) {
      throw invalidQuery(`Invalid where: ${op} on ${key} takes {query: {className, where}, key}.`);
    }
    const selectedKey = operand.key;
    if (keyPathProblem(selectedKey))
      throw invalidKeyName(`Invalid where: ${op} key ${JSON.stringify(selectedKey)}.`);
    const query = this.parseSubQuery(operand.query, op, key, sub + 1);
    return { type: 'select', path, query, key: selectedKey, not: op === '$dontSelect' };
  }

  private parseSubQuery(operand: unknown, op: string, key: string, level: number): SubQuery {
    const max = this.limits.subqueryDepth;
    if (max !== undefined && max >= 0 && level > max) {
      throw invalidQuery(`Subquery depth of ${level} exceeds the maximum of ${max}.`);
    }

    if (!isObject(operand) || typeof operand.className !== 'string') {
      throw invalidQuery(`Invalid where: ${op} on ${key} takes {className, where}.`);
    }
    if (!isValidClassName(operand.className)) {
      throw new BdsError(ErrorCode.INVALID_CLASS_NAME, `Invalid class name: ${operand.className}.`);
    }
    const where = operand.where === undefined ? {} : operand.where;
    return { className: operand.className, where: this.parseRoot(where, level) };
  }
}

const MAX_DISTANCE_KEYS = [
  '$maxDistance',
  '$maxDistanceInRadians',
  '$maxDistanceInMiles',
  '$maxDistanceInKilometers',
];

/** An object whose keys are operators (`{"$gt": 1}`), as opposed to a value to compare with. */
function isOperatorObject(value: unknown): boolean {
  if (!isObject(value)) return false;
  const keys = Object.keys(value);
  if (keys.length === 0 || '__type' in value) return false;
  const ops = keys.filter((k) => k.startsWith('$')).length;
  if (ops === 0) return false;
  if (ops !== keys.length) throw invalidQuery('Invalid where: operators cannot be mixed with plain keys.');
  return true;
}

function parseArray(operand: unknown, op: string, key: string): WireValue[] {
  if (!Array.isArray(operand)) throw invalidQuery(`Invalid where: ${op} on ${key} takes an array.`);
  return operand.map((v) => parseValue(v, key));
}

/** Validates a wire value used in a query and normalises dates. */
export function parseValue(value: unknown, key: string): WireValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw invalidQuery(`Invalid where: ${key} compares with a non-finite number.`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => parseValue(v, key));
  if (!isObject(value)) throw invalidQuery(`Invalid where: unsupported value for ${key}.`);
  const type = value.__type;
  if (type === undefined) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k.startsWith('$'))
        throw invalidQuery(`Invalid where: unexpected operator ${k} inside a value of ${key}.`);
      out[k] = parseValue(v, key);
    }
    return out;
  }
  switch (type) {
    case 'Date': {
      const iso = normaliseIso(value.iso);
      if (!iso) throw invalidQuery(`Invalid where: ${key} has a Date with a bad iso value.`);
      return { __type: 'Date', iso };
    }
    case 'Pointer':
      return { __type: 'Pointer', ...parsePointer(value, key) };
    case 'GeoPoint':
      return { __type: 'GeoPoint', ...parseGeoPoint(value, key) };
    case 'File':
      if (typeof value.name !== 'string')
        throw invalidQuery(`Invalid where: ${key} has a File without a name.`);
      return { __type: 'File', name: value.name, url: value.url };
    case 'Bytes':
      if (typeof value.base64 !== 'string')
        throw invalidQuery(`Invalid where: ${key} has Bytes without base64.`);
      return { __type: 'Bytes', base64: value.base64 };
    case 'Polygon': {
      const coords = value.coordinates;
      const ok =
        Array.isArray(coords) &&
        coords.length >= 3 &&
        coords.every((c) => Array.isArray(c) && c.length === 2 && c.every((n) => typeof n === 'number'));
      if (!ok) throw invalidQuery(`Invalid where: ${key} has a Polygon without [latitude, longitude] pairs.`);
      return { __type: 'Polygon', coordinates: closedRing(coords as number[][]) };
    }
    case 'Object':
      return { __type: 'Pointer', ...parsePointer(value, key) };
    default:
      throw invalidQuery(`Invalid where: ${key} has an unsupported __type ${JSON.stringify(type)}.`);
  }
}

export function normaliseIso(iso: unknown): string | null {
  if (typeof iso !== 'string') return null;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return null;
  return new Date(t).toISOString();
}

function parsePointer(value: Record<string, unknown>, key: string): PointerValue {
  const { className, objectId } = value;
  if (typeof className !== 'string' || typeof objectId !== 'string' || !isValidClassName(className)) {
    throw invalidQuery(`Invalid where: ${key} has a malformed pointer.`);
  }
  return { className, objectId };
}

function parseGeoPoint(value: unknown, key: string): GeoPointValue {
  if (isObject(value)) {
    const { latitude, longitude } = value;
    if (
      typeof latitude === 'number' &&
      typeof longitude === 'number' &&
      latitude >= -90 &&
      latitude <= 90 &&
      longitude >= -180 &&
      longitude <= 180
    ) {
      return { latitude, longitude };
    }
  }
  // GeoJSON-style [longitude, latitude] pairs are not accepted: the wire form is explicit.
  throw invalidQuery(
    `Invalid where: ${key} needs a GeoPoint with latitude in [-90, 90] and longitude in [-180, 180].`,
  );
}

function parseRelatedTo(value: unknown): QueryNode {
  if (!isObject(value) || typeof value.key !== 'string' || !isObject(value.object)) {
    throw invalidQuery('Invalid where: $relatedTo takes {object: <pointer>, key: <relation field>}.');
  }
  if (value.key.includes('.') || keyPathProblem(value.key)) {
    throw invalidKeyName(`Invalid where: $relatedTo key ${JSON.stringify(value.key)}.`);
  }
  // An owner not saved yet (a pointer without an objectId, as an SDK sends for a new object) holds
  // nothing: no row is related to it, as the incumbent answers.
  const { className, objectId } = value.object;
  if (objectId === undefined && typeof className === 'string' && isValidClassName(className)) {
    return { type: 'or', children: [] };
  }
  return { type: 'relatedTo', owner: parsePointer(value.object, '$relatedTo'), key: value.key };
}

function parseRegex(path: Path, key: string, pattern: unknown, options: unknown): QueryNode {
  if (typeof pattern !== 'string') throw invalidQuery(`Invalid where: $regex on ${key} takes a string.`);
  if (options !== undefined && (typeof options !== 'string' || !/^[imxs]*$/.test(options))) {
    throw invalidQuery(`Invalid where: $options on ${key} may only hold the flags i, m, x and s.`);
  }
  let spec: RegexSpec;
  try {
    spec = prepareRegex(pattern, typeof options === 'string' ? options : '');
  } catch (err) {
    if (err instanceof RegexTooLarge) {
      throw invalidQuery(`Invalid where: $regex on ${key} is too large: ${err.message}.`);
    }
    throw invalidQuery(
      `Invalid where: $regex on ${key} is not a valid regular expression: ${(err as Error).message}`,
    );
  }
  return { type: 'regex', path, source: spec.source, flags: spec.flags };
}

function parseNearSphere(path: Path, key: string, constraints: Record<string, unknown>): QueryNode {
  const point = parseGeoPoint(stripType(constraints.$nearSphere, 'GeoPoint', key), key);
  let maxDistance: number | undefined;
  const distanceKeys: Array<[string, number]> = [
    ['$maxDistance', 1],
    ['$maxDistanceInRadians', 1],
    ['$maxDistanceInMiles', 1 / EARTH_RADIUS_MILES],
    ['$maxDistanceInKilometers', 1 / EARTH_RADIUS_KM],
  ];
  for (const [name, factor] of distanceKeys) {
    const d = constraints[name];
    if (d === undefined) continue;
    if (typeof d !== 'number' || !(d >= 0))
      throw invalidQuery(`Invalid where: ${name} on ${key} takes a number >= 0.`);
    maxDistance = d * factor;
  }
  return maxDistance === undefined
    ? { type: 'nearSphere', path, point }
    : { type: 'nearSphere', path, point, maxDistance };
}

function stripType(value: unknown, type: string, key: string): unknown {
  if (isObject(value) && value.__type !== undefined && value.__type !== type) {
    throw invalidQuery(`Invalid where: ${key} expected a ${type}.`);
  }
  return value;
}

function parseWithin(path: Path, key: string, operand: unknown): QueryNode {
  if (!isObject(operand) || !Array.isArray(operand.$box) || operand.$box.length !== 2) {
    throw invalidQuery(`Invalid where: $within on ${key} takes {$box: [southwest, northeast]}.`);
  }
  const first = parseGeoPoint(operand.$box[0], key);
  const second = parseGeoPoint(operand.$box[1], key);
  // Corners given north-east first (the first above the second) are read the other way round, as
  // the incumbent does; with the south-west corner first, one east of the other crosses the antimeridian.
  const [southwest, northeast] = first.latitude > second.latitude ? [second, first] : [first, second];
  return { type: 'withinBox', path, southwest, northeast };
}

function parseGeoWithin(path: Path, key: string, operand: unknown): QueryNode {
  if (isObject(operand) && operand.$polygon !== undefined) {
    let raw: unknown = operand.$polygon;
    if (isObject(raw) && raw.__type === 'Polygon') {
      raw = (raw.coordinates as unknown[] | undefined)?.map((c) =>
        Array.isArray(c) ? { latitude: c[0], longitude: c[1] } : c,
      );
    }
    if (!Array.isArray(raw) || raw.length < 3) {
      throw invalidGeometry(`Invalid where: $geoWithin.$polygon on ${key} takes at least 3 GeoPoints.`);
    }
    const polygon = raw.map((point) => {
      try {
        return parseGeoPoint(point, key);
      } catch (err) {
        if (err instanceof BdsError) throw invalidGeometry(err.message);
        throw err;
      }
    });
    return { type: 'withinPolygon', path, polygon };
  }
  if (isObject(operand) && operand.$centerSphere !== undefined) {
    const cs = operand.$centerSphere;
    if (!Array.isArray(cs) || cs.length !== 2 || typeof cs[1] !== 'number' || !(cs[1] >= 0)) {
      throw invalidQuery(
        `Invalid where: $geoWithin.$centerSphere on ${key} takes [GeoPoint, radius in radians].`,
      );
    }
    const c = Array.isArray(cs[0]) ? { latitude: cs[0][1], longitude: cs[0][0] } : cs[0];
    return { type: 'withinCenterSphere', path, center: parseGeoPoint(c, key), radius: cs[1] };
  }
  throw invalidQuery(`Invalid where: $geoWithin on ${key} takes $polygon or $centerSphere.`);
}

function parseGeoIntersects(path: Path, key: string, operand: unknown): QueryNode {
  if (!isObject(operand) || operand.$point === undefined) {
    throw invalidQuery(`Invalid where: $geoIntersects on ${key} takes {$point: GeoPoint}.`);
  }
  return { type: 'intersectsPoint', path, point: parseGeoPoint(operand.$point, key) };
}
