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

/** Ray casting over [latitude, longitude] vertices. */
export function pointInPolygon(
  lat: number,
  lng: number,
  vertices: ReadonlyArray<readonly number[]>,
): boolean {
  let inside = false;
  for (let i = 0, j = vertices.length - 1; i < vertices.length; j = i++) {
    const [yi, xi] = vertices[i] as [number, number];
    const [yj, xj] = vertices[j] as [number, number];
    if (yi > lat !== yj > lat && lng < ((xj - xi) * (lat - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
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
