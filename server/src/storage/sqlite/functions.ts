import type Database from 'better-sqlite3';

const regexCache = new Map<string, RegExp>();

function cachedRegex(source: string, flags: string): RegExp {
  const key = `${flags}/${source}`;
  let re = regexCache.get(key);
  if (!re) {
    re = new RegExp(source, flags);
    if (regexCache.size > 500) regexCache.clear();
    regexCache.set(key, re);
  }
  return re;
}

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
export function pointInPolygon(lat: number, lng: number, vertices: Array<[number, number]>): boolean {
  let inside = false;
  for (let i = 0, j = vertices.length - 1; i < vertices.length; j = i++) {
    const [yi, xi] = vertices[i]!;
    const [yj, xj] = vertices[j]!;
    if (yi > lat !== yj > lat && lng < ((xj - xi) * (lat - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** SQL functions the SQLite dialect compiles to: regex matching and spherical geometry. */
export function registerFunctions(db: Database.Database): void {
  db.function('bds_regexp', { deterministic: true }, (source, flags, value) => {
    if (typeof value !== 'string') return 0;
    return cachedRegex(String(source), String(flags)).test(value) ? 1 : 0;
  });
  db.function('bds_distance', { deterministic: true }, (lat1, lng1, lat2, lng2) => {
    if (typeof lat1 !== 'number' || typeof lng1 !== 'number') return null;
    return distanceRadians(lat1, lng1, Number(lat2), Number(lng2));
  });
  db.function('bds_point_in_polygon', { deterministic: true }, (lat, lng, polygon) => {
    if (typeof lat !== 'number' || typeof lng !== 'number' || typeof polygon !== 'string') return 0;
    const vertices = JSON.parse(polygon) as Array<[number, number]>;
    return pointInPolygon(lat, lng, vertices) ? 1 : 0;
  });
}
