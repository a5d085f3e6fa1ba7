import { AGGREGATE_PATH_SEGMENT_PATTERN, isObject } from '@bds/client/protocol';
import type {
  Accumulator,
  AccumulatorOp,
  GroupKey,
  Operand,
  Projection,
  Similarity,
  Stage,
} from '../kernel/aggregate.ts';
import { invalidQuery } from '../kernel/errors.ts';
import { fieldNameProblem } from '../kernel/names.ts';
import type { Path } from '../kernel/query.ts';
import { parseWhere } from './parse.ts';

const ACCUMULATORS = new Set<AccumulatorOp>([
  'sum',
  'avg',
  'min',
  'max',
  'count',
  'first',
  'last',
  'push',
  'addToSet',
]);
const SIMILARITIES = new Set<Similarity>(['cosine', 'dotProduct', 'euclidean']);
export const MAX_VECTOR_LIMIT = 1000;

/** `"$a.b"` -> `['a', 'b']`; `_id` is the row's objectId (the incumbent's convention). */
function fieldRef(value: unknown, where: string): Path {
  if (typeof value !== 'string' || !value.startsWith('$') || value.length < 2) {
    throw invalidQuery(`${where} must be a field reference such as "$score".`);
  }
  return fieldPath(value.slice(1), where);
}

function fieldPath(text: string, where: string): Path {
  const parts = text.split('.');
  if (parts.some((p) => !AGGREGATE_PATH_SEGMENT_PATTERN.test(p)))
    throw invalidQuery(`${where}: invalid field name ${JSON.stringify(text)}.`);
  if (parts[0] === '_id') parts[0] = 'objectId';
  return parts;
}

function count(value: unknown, stage: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidQuery(`${stage} takes a whole number, got ${JSON.stringify(value)}.`);
  }
  return value;
}

function object(value: unknown, stage: string): Record<string, unknown> {
  if (!isObject(value)) throw invalidQuery(`${stage} takes an object.`);
  return value;
}

function groupKey(raw: unknown): GroupKey {
  if (raw === null) return { kind: 'null' };
  if (typeof raw === 'string') return { kind: 'field', path: fieldRef(raw, '$group _id') };
  if (isObject(raw) && Object.keys(raw).length > 0) {
    return {
      kind: 'fields',
      fields: Object.entries(raw).map(([name, ref]) => {
        if (fieldNameProblem(name) !== undefined)
          throw invalidQuery(`$group _id: invalid key name ${JSON.stringify(name)}.`);
        return [name, fieldRef(ref, `$group _id.${name}`)];
      }),
    };
  }
  throw invalidQuery('$group _id must be null, a field reference such as "$category", or an object of them.');
}

function accumulator(name: string, raw: unknown): Accumulator {
  const entries = isObject(raw) ? Object.entries(raw) : [];
  if (entries.length !== 1 || !entries[0]![0].startsWith('$')) {
    throw invalidQuery(`$group field ${name} needs one accumulator, such as {"$sum": "$score"}.`);
  }
  const [key, arg] = entries[0]!;
  const op = key.slice(1) as AccumulatorOp;
  if (!ACCUMULATORS.has(op)) throw invalidQuery(`Invalid $group accumulator '${key}' for ${name}.`);
  if (op === 'count') return { op, operand: { constant: 1 } };
  let operand: Operand;
  if (typeof arg === 'string' && arg.startsWith('$')) operand = { path: fieldRef(arg, `$group ${name}`) };
  else if ((op === 'sum' || op === 'avg') && typeof arg !== 'number') {
    throw invalidQuery(`${key} of ${name} takes a field reference or a number.`);
  } else operand = { constant: arg };
  return { op, operand };
}

function projection(raw: Record<string, unknown>): Projection {
  let keepId = true;
  const include: Array<[string, Path]> = [];
  const exclude: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const name = key === '_id' ? 'objectId' : key;
    if (name === 'objectId' && (value === 0 || value === false)) {
      keepId = false;
      continue;
    }
    if (value === 1 || value === true) include.push([name, fieldPath(key, '$project')]);
    else if (value === 0 || value === false) exclude.push(name);
    else if (typeof value === 'string') include.push([name, fieldRef(value, `$project ${key}`)]);
    else throw invalidQuery(`$project ${key} takes 1, 0 or a field reference.`);
  }
  if (include.length && exclude.length)
    throw invalidQuery('$project cannot both include and exclude fields.');
  return exclude.length
    ? { mode: 'exclude', fields: exclude, keepId }
    : { mode: 'include', fields: include, keepId };
}

function vectorSearch(raw: Record<string, unknown>): Stage {
  const { queryVector, path, limit, numCandidates, filter, similarity, ...rest } = raw;
  const unknown = Object.keys(rest)[0];
  if (unknown) throw invalidQuery(`$vectorSearch: unknown field ${unknown}.`);
  if (
    !Array.isArray(queryVector) ||
    queryVector.length === 0 ||
    !queryVector.every((x) => typeof x === 'number' && Number.isFinite(x))
  ) {
    throw invalidQuery('$vectorSearch queryVector must be a non-empty array of numbers.');
  }
  if (typeof path !== 'string' || fieldNameProblem(path) !== undefined)
    throw invalidQuery('$vectorSearch path must name a field.');
  const n = count(limit, '$vectorSearch limit');
  if (n < 1 || n > MAX_VECTOR_LIMIT)
    throw invalidQuery(`$vectorSearch limit must be between 1 and ${MAX_VECTOR_LIMIT}.`);
  const candidates = numCandidates === undefined ? n : count(numCandidates, '$vectorSearch numCandidates');
  if (candidates < n) throw invalidQuery('$vectorSearch numCandidates must be at least limit.');
  const kind = (similarity ?? 'cosine') as Similarity;
  if (!SIMILARITIES.has(kind))
    throw invalidQuery('$vectorSearch similarity must be cosine, dotProduct or euclidean.');
  return {
    stage: 'vectorSearch',
    search: {
      path,
      vector: queryVector as number[],
      limit: n,
      numCandidates: candidates,
      filter: parseWhere(filter ?? {}),
      similarity: kind,
    },
  };
}

/** A `$match` where with `_id` (as `$group` and `$project` name it) read as `objectId`, also in dot paths. */
function idKeys(where: unknown): unknown {
  if (!isObject(where)) return where;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(where)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      out[key] = Array.isArray(value) ? value.map(idKeys) : value;
    } else if (key === '_id' || key.startsWith('_id.')) {
      out[`objectId${key.slice(3)}`] = value;
    } else out[key] = value;
  }
  return out;
}

function stage(raw: unknown, index: number): Stage {
  const entries = isObject(raw) ? Object.entries(raw) : [];
  if (entries.length !== 1)
    throw invalidQuery(
      `Pipeline stage ${index} must be an object with one stage, such as {"$match": {...}}.`,
    );
  const [name, value] = entries[0]!;
  switch (name) {
    case '$match':
      return { stage: 'match', where: object(value, '$match'), node: parseWhere(idKeys(value)) };
    case '$group': {
      const { _id, ...rest } = object(value, '$group');
      if (!('_id' in (value as object))) throw invalidQuery('$group needs an _id (null groups every row).');
      return {
        stage: 'group',
        group: {
          key: groupKey(_id),
          accumulators: Object.entries(rest).map(([field, acc]) => {
            if (fieldNameProblem(field) !== undefined)
              throw invalidQuery(`$group: invalid field name ${JSON.stringify(field)}.`);
            return [field, accumulator(field, acc)];
          }),
        },
      };
    }
    case '$project':
      return { stage: 'project', projection: projection(object(value, '$project')) };
    case '$sort': {
      const keys = Object.entries(object(value, '$sort')).map(([field, dir]) => {
        if (dir !== 1 && dir !== -1) throw invalidQuery(`$sort ${field} must be 1 or -1.`);
        return { path: fieldPath(field, '$sort'), descending: dir === -1 };
      });
      if (keys.length === 0) throw invalidQuery('$sort needs at least one field.');
      return { stage: 'sort', keys };
    }
    case '$limit':
      return { stage: 'limit', n: count(value, '$limit') };
    case '$skip':
      return { stage: 'skip', n: count(value, '$skip') };
    case '$count':
      if (typeof value !== 'string' || fieldNameProblem(value) !== undefined)
        throw invalidQuery('$count takes the name of the field to count into.');
      return { stage: 'count', field: value };
    case '$unwind': {
      if (typeof value === 'string')
        return { stage: 'unwind', path: fieldRef(value, '$unwind'), preserveNullAndEmptyArrays: false };
      const { path, includeArrayIndex, preserveNullAndEmptyArrays } = object(value, '$unwind');
      if (
        includeArrayIndex !== undefined &&
        (typeof includeArrayIndex !== 'string' || fieldNameProblem(includeArrayIndex) !== undefined)
      ) {
        throw invalidQuery('$unwind includeArrayIndex must be a field name.');
      }
      return {
        stage: 'unwind',
        path: fieldRef(path, '$unwind path'),
        includeArrayIndex: includeArrayIndex as string | undefined,
        preserveNullAndEmptyArrays: preserveNullAndEmptyArrays === true,
      };
    }
    case '$lookup': {
      const { from, localField, foreignField, as } = object(value, '$lookup');
      if (
        typeof from !== 'string' ||
        typeof localField !== 'string' ||
        typeof foreignField !== 'string' ||
        typeof as !== 'string' ||
        fieldNameProblem(as) !== undefined
      ) {
        throw invalidQuery('$lookup takes {from, localField, foreignField, as}.');
      }
      const foreign = fieldPath(foreignField, '$lookup foreignField');
      if (foreign.length !== 1) throw invalidQuery('$lookup foreignField must be a top-level field.');
      return {
        stage: 'lookup',
        from,
        localField: fieldPath(localField, '$lookup localField'),
        foreignField: foreign[0]!,
        as,
      };
    }
    case '$vectorSearch':
      if (index !== 0) throw invalidQuery('$vectorSearch must be the first stage of the pipeline.');
      return vectorSearch(object(value, '$vectorSearch'));
    default:
      throw invalidQuery(`Invalid aggregate stage '${name}'.`);
  }
}

/** Parses a pipeline (an array of stages, or its JSON text from a GET parameter). */
export function parsePipeline(raw: unknown): Stage[] {
  let pipeline = raw;
  if (typeof raw === 'string') {
    try {
      pipeline = JSON.parse(raw);
    } catch {
      throw invalidQuery('pipeline is not valid JSON.');
    }
  }
  if (isObject(pipeline)) pipeline = [pipeline];
  if (!Array.isArray(pipeline))
    throw invalidQuery('pipeline must be an array of stages, as in {"pipeline": [...]}.');
  return pipeline.map((s, i) => stage(s, i));
}
