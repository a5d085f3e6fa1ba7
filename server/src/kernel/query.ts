/**
 * The query AST: what a `where` means, independent of any storage. The SQL compiler and the
 * in-memory matcher (realtime) both consume it.
 *
 * Values stay in their wire form (`{"__type":"Date","iso":…}`, pointers, plain JSON), with dates
 * normalised to ISO 8601 with milliseconds in UTC.
 */

/** A field and, for object fields, the keys below it: `"a.b.c"` is `['a', 'b', 'c']`. */
export type Path = readonly string[];

export type WireValue = unknown;

export interface GeoPointValue {
  latitude: number;
  longitude: number;
}

export interface PointerValue {
  className: string;
  objectId: string;
}

export type Comparison = 'eq' | 'ne' | 'lt' | 'lte' | 'gt' | 'gte';

/** A `$text` search (query/text.ts holds its rule): the words sought, folded as the rule folds them. */
export interface TextSearch {
  terms: string[];
  /** A language of query/text.ts TEXT_LANGUAGES (its stop words). */
  language: string;
  caseSensitive: boolean;
  diacriticSensitive: boolean;
}

export interface SubQuery {
  className: string;
  where: QueryNode;
}

export type QueryNode =
  | { type: 'and'; children: QueryNode[] }
  | { type: 'or'; children: QueryNode[] }
  | { type: 'nor'; children: QueryNode[] }
  | { type: 'compare'; path: Path; op: Comparison; value: WireValue }
  | { type: 'in'; path: Path; values: WireValue[]; not: boolean }
  | { type: 'all'; path: Path; values: WireValue[] }
  | { type: 'containedBy'; path: Path; values: WireValue[] }
  | { type: 'exists'; path: Path; exists: boolean }
  | { type: 'regex'; path: Path; source: string; flags: string }
  | { type: 'select'; path: Path; query: SubQuery; key: string; not: boolean }
  | { type: 'inQuery'; path: Path; query: SubQuery; not: boolean }
  | { type: 'relatedTo'; owner: PointerValue; key: string }
  | { type: 'nearSphere'; path: Path; point: GeoPointValue; maxDistance?: number }
  | { type: 'withinBox'; path: Path; southwest: GeoPointValue; northeast: GeoPointValue }
  | { type: 'withinPolygon'; path: Path; polygon: GeoPointValue[] }
  | { type: 'withinCenterSphere'; path: Path; center: GeoPointValue; radius: number }
  | { type: 'intersectsPoint'; path: Path; point: GeoPointValue }
  | { type: 'text'; path: Path; search: TextSearch }
  /**
   * The ACL layer as a row condition: rows with no ACL, or whose ACL grants `access` to one of
   * `principals`. Built by access/ (never parsed from a request); storage compiles it to SQL and
   * the in-memory matcher evaluates it with kernel/acl.ts.
   */
  | { type: 'acl'; access: 'read' | 'write'; principals: readonly string[] };

export const MATCH_ALL: QueryNode = { type: 'and', children: [] };

/** Mean Earth radius, used to turn miles and kilometres into radians. */
export const EARTH_RADIUS_KM = 6371;
export const EARTH_RADIUS_MILES = 3958.8;
