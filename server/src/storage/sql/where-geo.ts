import type { GeoPointValue, Path, QueryNode } from '../../kernel/query.ts';
import type { ClassSchema } from '../../kernel/schema.ts';
import { checkGeoPointField, checkPolygonField } from '../../query/fields.ts';
import type { GeoBox, GeoFieldType, NativeGeo } from './dialect.ts';
import { boundsOf, capBoxes, capMeters, withinBoxBoxes } from './geo-boxes.ts';
import { WhereComparisons } from './where-compare.ts';
import { FALSE, type Operand } from './where-operands.ts';

/**
 * The where compiler's geo operators: from the native geometry columns where the dialect keeps
 * them (behind an index-usable prefilter, see geo-boxes.ts), else from the JSON of the field.
 */
export class WhereGeo extends WhereComparisons {
  /** Set when the query uses $nearSphere: results are ordered by distance unless told otherwise. */
  private nearOrder: { latitude: string; longitude: string; point: GeoPointValue } | undefined;

  /** ORDER BY expression for $nearSphere, when the query has one. */
  nearOrderSql(): string | undefined {
    if (!this.nearOrder) return undefined;
    const { latitude, longitude, point } = this.nearOrder;
    return this.dialect.geoDistance(
      latitude,
      longitude,
      this.params.add(point.latitude),
      this.params.add(point.longitude),
    );
  }

  /** `$nearSphere`: a point within `$maxDistance` radians, if given; it orders the rows by distance (see nearOrderSql). */
  protected nearSphere(
    schema: ClassSchema,
    alias: string,
    node: Extract<QueryNode, { type: 'nearSphere' }>,
  ): string {
    const point = this.geoPoint(schema, alias, node.path);
    if (!point) return FALSE;
    // The ORDER BY repeats the expression with its own parameters, added when the order is built.
    if (this.subqueryLevel === 0) this.nearOrder ??= { ...point, point: node.point };
    if (node.maxDistance === undefined) return `${point.sql} IS NOT NULL`;
    const prefilter = this.capPrefilter(point, node.point, node.maxDistance);
    const distance = this.dialect.geoDistance(
      point.latitude,
      point.longitude,
      this.params.add(node.point.latitude),
      this.params.add(node.point.longitude),
    );
    return `${prefilter}${distance} <= ${this.params.add(node.maxDistance)}`;
  }

  /** `$within: {$box}`: a point within the box (across the antimeridian when its west is east of its east). */
  protected withinBox(
    schema: ClassSchema,
    alias: string,
    node: Extract<QueryNode, { type: 'withinBox' }>,
  ): string {
    const point = this.geoPoint(schema, alias, node.path);
    if (!point) return FALSE;
    const { latitude: lat, longitude: lng } = point;
    const { southwest: sw, northeast: ne } = node;
    const prefilter = this.pointPrefilter(point, withinBoxBoxes(sw, ne));
    const latSql = `${lat} BETWEEN ${this.params.add(sw.latitude)} AND ${this.params.add(ne.latitude)}`;
    const lngSql =
      sw.longitude <= ne.longitude
        ? `${lng} BETWEEN ${this.params.add(sw.longitude)} AND ${this.params.add(ne.longitude)}`
        : `(${lng} >= ${this.params.add(sw.longitude)} OR ${lng} <= ${this.params.add(ne.longitude)})`;
    return `${prefilter}${latSql} AND ${lngSql}`;
  }

  /** `$geoWithin: {$polygon}`: a point inside the polygon. */
  protected withinPolygon(
    schema: ClassSchema,
    alias: string,
    node: Extract<QueryNode, { type: 'withinPolygon' }>,
  ): string {
    const point = this.geoPoint(schema, alias, node.path);
    if (!point) return FALSE;
    const prefilter = this.pointPrefilter(point, [boundsOf(node.polygon)]);
    const vertices = node.polygon.map((p) => [p.latitude, p.longitude]);
    return `${prefilter}${this.dialect.pointInPolygon(point.latitude, point.longitude, this.params.add(JSON.stringify(vertices)))} = 1`;
  }

  /** `$geoWithin: {$centerSphere}`: a point within `radius` radians of the center. */
  protected withinCenterSphere(
    schema: ClassSchema,
    alias: string,
    node: Extract<QueryNode, { type: 'withinCenterSphere' }>,
  ): string {
    const point = this.geoPoint(schema, alias, node.path);
    if (!point) return FALSE;
    const prefilter = this.capPrefilter(point, node.center, node.radius);
    const d = this.dialect.geoDistance(
      point.latitude,
      point.longitude,
      this.params.add(node.center.latitude),
      this.params.add(node.center.longitude),
    );
    return `${prefilter}${d} <= ${this.params.add(node.radius)}`;
  }

  /** `$geoIntersects: {$point}`: a Polygon that holds the point. */
  protected intersectsPoint(
    schema: ClassSchema,
    alias: string,
    node: Extract<QueryNode, { type: 'intersectsPoint' }>,
  ): string {
    const op = this.operand(schema, alias, node.path);
    if (op.missing) return FALSE;
    checkPolygonField(op.def);
    // Ray casting finds a point inside only within the polygon's bounding box (see boundsOf).
    const native = this.nativeGeo(op, alias, 'Polygon');
    const prefilter = native
      ? `${native.geo.polygonMeetsBox(native.column, boundsOf([node.point]), (v) => this.params.add(v))} AND `
      : '';
    return `${prefilter}${this.dialect.polygonContainsPoint(op.sql, this.params.add(node.point.latitude), this.params.add(node.point.longitude))} = 1`;
  }

  /**
   * The latitude and longitude a geo operator reads (NULL where there is no point), or none when
   * the field is missing: from the native point column of a top-level GeoPoint field where the
   * dialect keeps one, else from the JSON.
   */
  protected geoPoint(schema: ClassSchema, alias: string, path: Path): GeoOperand | undefined {
    const op = this.operand(schema, alias, path);
    checkGeoPointField(op.def, path);
    if (op.missing) return undefined;
    const native = this.nativeGeo(op, alias, 'GeoPoint');
    if (native) return { ...native.geo.coordinates(native.column), sql: op.sql, native };
    const coordinate = (name: string) => {
      const keys = [...op.keys, name];
      const value = this.dialect.jsonPath(op.column, keys);
      // A GeoPoint column holds numbers; below an Object only a number is a coordinate.
      if (op.def) return value;
      return `CASE WHEN ${this.dialect.jsonTypeIn(this.dialect.jsonType(op.column, keys), ['number'])} THEN ${value} END`;
    };
    return { latitude: coordinate('latitude'), longitude: coordinate('longitude'), sql: op.sql };
  }

  /** The dialect's native column of a top-level field of `type` (none below an Object, or without native geometry). */
  protected nativeGeo(op: Operand, alias: string, type: GeoFieldType): NativeColumn | undefined {
    const geo = this.dialect.nativeGeo;
    if (!geo || op.keys.length > 0 || op.def?.type !== type) return undefined;
    return { geo, column: `${alias}.${this.dialect.quote(geo.column(op.field, type))}` };
  }

  /**
   * An index-usable test, followed by ` AND `, that holds for every point in one of `boxes` (a
   * superset of the exact condition that follows it); '' on the JSON path or without boxes.
   */
  protected pointPrefilter(point: GeoOperand, boxes: GeoBox[] | undefined): string {
    if (!point.native || !boxes) return '';
    return `${point.native.geo.pointInBoxes(point.native.column, boxes, (v) => this.params.add(v))} AND `;
  }

  /**
   * The prefilter of a spherical cap (`$centerSphere`, `$nearSphere` with `$maxDistance`): the
   * dialect's distance test on its sphere where it has one and capMeters proves it a superset,
   * else the boxes of capBoxes.
   */
  protected capPrefilter(point: GeoOperand, center: GeoPointValue, radius: number): string {
    const sphere = point.native?.geo.sphere;
    const meters = sphere && capMeters(radius, sphere.radius);
    if (meters !== undefined) {
      return `${sphere!.pointWithin(point.native!.column, center, meters, (v) => this.params.add(v))} AND `;
    }
    return this.pointPrefilter(point, capBoxes(center, radius));
  }
}

/** The coordinates a geo operator reads, and the native point column they come from (if so). */
interface GeoOperand {
  latitude: string;
  longitude: string;
  /** SQL of the stored value (NULL where the row has none). */
  sql: string;
  native?: NativeColumn;
}

/** A native geometry column (quoted, with its table) and the dialect's SQL for it. */
interface NativeColumn {
  geo: NativeGeo;
  column: string;
}
