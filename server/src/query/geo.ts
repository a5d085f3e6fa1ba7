/**
 * Spherical geometry of the where language, shared by storage (the SQLite functions) and the
 * in-memory matcher so that both answer a geo query with the same arithmetic.
 */

/** Haversine distance in radians. */
export function distanceRadians(lat1: number, lng1: number, lat2: number, lng2: number): number {
  const toRad = Math.PI / 180;
  const dLat = (lat2 - lat1) * toRad;
  const dLng = (lng2 - lng1) * toRad;
  const a =
    Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * toRad) * Math.cos(lat2 * toRad) * Math.sin(dLng / 2) ** 2;
  return 2 * Math.atan2(Math.sqrt(a), Math.sqrt(1 - a));
}

/**
 * Is the point inside the polygon of [latitude, longitude] vertices? A point on the boundary (a
 * vertex, or on an edge: the cross product of the edge and the point is exactly zero in double
 * arithmetic) is inside, as the incumbent's PostgreSQL answers (a closed polygon); any other point
 * is decided by ray casting. The PostgreSQL store runs the same arithmetic in PL/pgSQL
 * (`bds_point_in_polygon`), so both stores answer alike.
 */
export function pointInPolygon(
  lat: number,
  lng: number,
  vertices: ReadonlyArray<readonly number[]>,
): boolean {
  let inside = false;
  for (let i = 0, j = vertices.length - 1; i < vertices.length; j = i++) {
    const [yi, xi] = vertices[i] as [number, number];
    const [yj, xj] = vertices[j] as [number, number];
    if (onSegment(lat, lng, yi, xi, yj, xj)) return true;
    if (yi > lat !== yj > lat && lng < ((xj - xi) * (lat - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** Is (y, x) on the segment from (yi, xi) to (yj, xj)? Within its box and on its line. */
function onSegment(y: number, x: number, yi: number, xi: number, yj: number, xj: number): boolean {
  if (y < Math.min(yi, yj) || y > Math.max(yi, yj) || x < Math.min(xi, xj) || x > Math.max(xi, xj)) {
    return false;
  }
  return (xj - xi) * (y - yi) - (yj - yi) * (x - xi) === 0;
}

/**
 * Is the point inside the box (edges included)? A box whose south-west longitude is east of its
 * north-east longitude crosses the antimeridian.
 */
export function pointInBox(
  lat: number,
  lng: number,
  southwest: { latitude: number; longitude: number },
  northeast: { latitude: number; longitude: number },
): boolean {
  if (lat < southwest.latitude || lat > northeast.latitude) return false;
  return southwest.longitude <= northeast.longitude
    ? lng >= southwest.longitude && lng <= northeast.longitude
    : lng >= southwest.longitude || lng <= northeast.longitude;
}

/**
 * A polygon's [latitude, longitude] vertices as a closed ring: the first vertex again at the end
 * unless it is there already. Polygons are stored closed (as the incumbent stores them), and a
 * Polygon compared in a where is closed the same way, so an open and a closed form are equal.
 */
export function closedRing<T extends readonly number[]>(coordinates: readonly T[]): T[] {
  const first = coordinates[0];
  const last = coordinates[coordinates.length - 1];
  if (!first || !last || (first[0] === last[0] && first[1] === last[1])) return [...coordinates];
  return [...coordinates, first];
}
