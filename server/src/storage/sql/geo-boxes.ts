import type { GeoPointValue } from '../../kernel/query.ts';
import type { GeoBox } from './dialect.ts';

/**
 * The boxes of the geo prefilters (where-geo.ts): every point the exact condition of a geo operator accepts
 * lies in one of them. They are padded by GEO_PAD degrees on every side, far more than what the
 * exact tests round by (below 1e-12 degrees for coordinates within ±180, in their few operations
 * on numbers of that size) and far less than anything a query means (1e-9 degrees is about 0.1 mm).
 */
const GEO_PAD = 1e-9;

const padded = (box: GeoBox): GeoBox => ({
  south: box.south - GEO_PAD,
  west: box.west - GEO_PAD,
  north: box.north + GEO_PAD,
  east: box.east + GEO_PAD,
});

/** `$within: {$box}`: its box, or two beside the antimeridian when it crosses it (as pointInBox reads it). */
export function withinBoxBoxes(southwest: GeoPointValue, northeast: GeoPointValue): GeoBox[] {
  const [south, north] = [southwest.latitude, northeast.latitude];
  if (southwest.longitude <= northeast.longitude) {
    return [padded({ south, west: southwest.longitude, north, east: northeast.longitude })];
  }
  return [
    padded({ south, west: southwest.longitude, north, east: Infinity }),
    padded({ south, west: -Infinity, north, east: northeast.longitude }),
  ];
}

/**
 * The bounding box of polygon vertices (or of one point). A point on the boundary lies within it,
 * and ray casting (query/geo.ts) finds a point inside only within it: an edge it counts spans the
 * point's latitude, so min <= latitude < max;
 * east of every vertex no edge is counted, and west of every vertex each edge that spans the
 * latitude is, and a closed ring has an even number of them. Each edge's crossing is computed
 * within about 1e-13 degrees of the edge, which the padding covers.
 */
export function boundsOf(points: readonly GeoPointValue[]): GeoBox {
  const latitudes = points.map((p) => p.latitude);
  const longitudes = points.map((p) => p.longitude);
  return padded({
    south: Math.min(...latitudes),
    west: Math.min(...longitudes),
    north: Math.max(...latitudes),
    east: Math.max(...longitudes),
  });
}

/**
 * Boxes holding every point within `radius` radians of `center` (the spherical cap that
 * `$centerSphere` and `$nearSphere` with `$maxDistance` accept), or none when they would hold
 * everything. Latitudes lie within the radius of the center's; unless the cap reaches a pole,
 * longitudes lie within asin(sin r / cos latitude) of the center's, the meridian the cap touches,
 * taken again 360 degrees east and west for a cap across the antimeridian.
 */
export function capBoxes(center: GeoPointValue, radius: number): GeoBox[] | undefined {
  // Grown past the haversine's rounding (about 1e-15 radians below a quarter turn), and so past
  // what the exact test may accept.
  const r = radius + 1e-12 * (1 + radius);
  // A cap of a quarter turn or more would keep most of the sphere (and the haversine rounds
  // more as distances near a half turn): no prefilter.
  if (!(r < Math.PI / 2)) return undefined;
  const toDegrees = 180 / Math.PI;
  const south = center.latitude - r * toDegrees;
  const north = center.latitude + r * toDegrees;
  const everyLongitude = [padded({ south, west: -Infinity, north, east: Infinity })];
  if (south - GEO_PAD <= -90 || north + GEO_PAD >= 90) return everyLongitude;
  // cos(latitude) as the sine of the distance to the pole, exact in relative terms near the pole.
  const cosLatitude = Math.sin((90 - Math.abs(center.latitude)) / toDegrees);
  // Enlarged past the rounding of the division; asin grows with it.
  const sinHalfWidth = (Math.sin(r) / cosLatitude) * (1 + 1e-12);
  if (!(sinHalfWidth < 1)) return everyLongitude;
  const halfWidth = Math.asin(sinHalfWidth) * toDegrees;
  const boxes: GeoBox[] = [];
  for (const shift of [0, 360, -360]) {
    const west = center.longitude - halfWidth + shift;
    const east = center.longitude + halfWidth + shift;
    if (west <= 180 && east >= -180) boxes.push(padded({ south, west, north, east }));
  }
  return boxes;
}

/**
 * The distance in meters on a sphere of `sphereRadius` meters within which lies every point the
 * exact test (haversine distance <= `radius` radians) accepts, or none when it would be about a
 * half turn (nothing to filter) or the radius is no distance. The haversine of query/geo.ts (and
 * bds_distance) is exact to about 1e-15 radians except near a half turn, where its argument `a`
 * (in [0, 1], computed within about 2e-15 of its true value) meets 2 asin(sqrt a), whose slope
 * grows without bound near 1: an error d in `a` moves the distance by at most 2 asin(sqrt d), so
 * the computed distance falls short of the true one by less than 1e-7 radians, well below the
 * 1e-6 radians (about 6.4 m) added here. A distance test
 * on the sphere (PostGIS's st_dwithin with use_spheroid false: radius times the atan2 form of
 * Vincenty's formula, accurate to about 1e-15 radians everywhere, antipodes included) then holds
 * for every such point once the distance is also grown by 1e-9 relative, past the rounding of its
 * products and of the measured radius. Past a half turn less that margin, every point passes.
 */
export function capMeters(radius: number, sphereRadius: number): number | undefined {
  const r = radius + 1e-6;
  if (!(radius >= 0) || !(r < Math.PI)) return undefined;
  return r * sphereRadius * (1 + 1e-9);
}
