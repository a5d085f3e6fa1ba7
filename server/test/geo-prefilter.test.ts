import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GeoPointValue } from '../src/kernel/query.ts';
import { distanceRadians, pointInBox, pointInPolygon } from '../src/query/geo.ts';
import type { GeoBox } from '../src/storage/sql/dialect.ts';
import { boundsOf, capBoxes, withinBoxBoxes } from '../src/storage/sql/geo-boxes.ts';

/**
 * The boxes of the index-usable prefilters that the where compiler puts before the exact geo
 * conditions on PostgreSQL's native columns (postgres-geo.test.ts runs them there): every point
 * the exact test of query/geo.ts accepts lies in one of them, including points on the edge of a
 * cap, on the vertices and edges of a polygon, at the poles and at ±180.
 */

const inSome = (boxes: readonly GeoBox[] | undefined, p: GeoPointValue) =>
  boxes === undefined ||
  boxes.some(
    (b) => p.latitude >= b.south && p.latitude <= b.north && p.longitude >= b.west && p.longitude <= b.east,
  );

const RAD = Math.PI / 180;
/** What every box is padded by (degrees). */
const PAD = 1e-9;

/** The point `distance` radians from `from` on the initial bearing `bearing` (radians), longitude in [-180, 180]. */
function destination(from: GeoPointValue, bearing: number, distance: number): GeoPointValue {
  const lat1 = from.latitude * RAD;
  const lng1 = from.longitude * RAD;
  const lat2 = Math.asin(
    Math.sin(lat1) * Math.cos(distance) + Math.cos(lat1) * Math.sin(distance) * Math.cos(bearing),
  );
  const lng2 =
    lng1 +
    Math.atan2(
      Math.sin(bearing) * Math.sin(distance) * Math.cos(lat1),
      Math.cos(distance) - Math.sin(lat1) * Math.sin(lat2),
    );
  let longitude = lng2 / RAD;
  while (longitude > 180) longitude -= 360;
  while (longitude < -180) longitude += 360;
  return { latitude: Math.max(-90, Math.min(90, lat2 / RAD)), longitude };
}

const latitude = fc.double({ min: -90, max: 90, noNaN: true });
const longitude = fc.double({ min: -180, max: 180, noNaN: true });
const point = fc.record({ latitude, longitude });
/** Whole degrees: polygons and points that meet exactly on vertices and edges. */
const gridPoint = fc.record({
  latitude: fc.integer({ min: -9, max: 9 }).map((n) => n * 10),
  longitude: fc.integer({ min: -18, max: 18 }).map((n) => n * 10),
});

describe('prefilter boxes of the geo operators', () => {
  it('a cap: every point the haversine keeps, near its edge on any bearing, is in a box', () => {
    fc.assert(
      fc.property(
        point,
        fc.double({ min: 0, max: Math.PI / 2, noNaN: true }),
        fc.double({ min: 0, max: 2 * Math.PI, noNaN: true }),
        fc.constantFrom(1, 1 - 1e-15, 1 - 1e-9, 1 + 1e-15, 0.5, 0),
        (center, radius, bearing, scale) => {
          const boxes = capBoxes(center, radius);
          const p = destination(center, bearing, radius * scale);
          if (distanceRadians(p.latitude, p.longitude, center.latitude, center.longitude) <= radius) {
            expect(inSome(boxes, p)).toBe(true);
          }
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it('a cap: the points of widest longitude, on both sides, near the poles and across ±180', () => {
    const centers: GeoPointValue[] = [
      { latitude: 0, longitude: 0 },
      { latitude: 60, longitude: 179.5 },
      { latitude: -60, longitude: -179.5 },
      { latitude: 89, longitude: 10 },
      { latitude: -89.9, longitude: 180 },
      { latitude: 45, longitude: -180 },
    ];
    for (const center of centers) {
      for (const radius of [1e-9, 1e-4, 0.01, 0.3, 1, 1.5]) {
        const boxes = capBoxes(center, radius);
        // The cap touches the meridian at asin(sin r / cos latitude) where the bearing is
        // acos(tan r / tan(pi/2 - latitude)); bearings around it on both sides.
        const colatitude = (90 - center.latitude) * RAD;
        const tangent = Math.acos(Math.min(1, Math.max(-1, Math.tan(radius) / Math.tan(colatitude))));
        for (const bearing of [tangent, -tangent, Math.PI - tangent, tangent + 1e-9, 0, Math.PI]) {
          const p = destination(center, bearing, radius);
          if (distanceRadians(p.latitude, p.longitude, center.latitude, center.longitude) <= radius) {
            expect(inSome(boxes, p), JSON.stringify({ center, radius, bearing, p })).toBe(true);
          }
        }
      }
    }
  });

  it('a cap: its latitudes always, longitudes unless it reaches a pole; none from a quarter turn', () => {
    expect(capBoxes({ latitude: 10, longitude: 20 }, Math.PI / 2)).toBeUndefined();
    expect(capBoxes({ latitude: 10, longitude: 20 }, 3)).toBeUndefined();
    expect(capBoxes({ latitude: 10, longitude: 20 }, Number.POSITIVE_INFINITY)).toBeUndefined();
    const polar = capBoxes({ latitude: 80, longitude: 20 }, 0.2)!;
    expect(polar).toHaveLength(1);
    expect(polar[0]!.west).toBe(Number.NEGATIVE_INFINITY);
    expect(polar[0]!.east).toBe(Number.POSITIVE_INFINITY);
    expect(polar[0]!.south).toBeCloseTo(80 - 0.2 / RAD - PAD, 9);
    expect(polar[0]!.north).toBeCloseTo(80 + 0.2 / RAD + PAD, 9);
    // 1 degree at the equator: 1 degree of longitude each way, one box.
    const small = capBoxes({ latitude: 0, longitude: 0 }, RAD)!;
    expect(small).toHaveLength(1);
    expect(small[0]!.west).toBeCloseTo(-1 - PAD, 9);
    expect(small[0]!.east).toBeCloseTo(1 + PAD, 9);
    expect(small[0]!.south).toBeCloseTo(-1 - PAD, 9);
    expect(small[0]!.north).toBeCloseTo(1 + PAD, 9);
    // At 60 degrees a degree of arc spans about two of longitude; across 180, a second box west of it.
    const across = capBoxes({ latitude: 60, longitude: 179.5 }, RAD)!;
    expect(across).toHaveLength(2);
    const halfWidth = Math.asin(Math.sin(RAD) / Math.cos(60 * RAD)) / RAD;
    expect(halfWidth).toBeCloseTo(2.0003, 4);
    expect(across[0]!.west).toBeCloseTo(179.5 - halfWidth - PAD, 9);
    expect(across[0]!.east).toBeCloseTo(179.5 + halfWidth + PAD, 9);
    expect(across[1]!.west).toBeCloseTo(179.5 - halfWidth - 360 - PAD, 9);
    expect(across[1]!.east).toBeCloseTo(179.5 + halfWidth - 360 + PAD, 9);
  });

  it('a polygon: every point ray casting finds inside is in its bounding box (vertices, edges, bowties)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(point, gridPoint), { minLength: 3, maxLength: 7 }),
        fc.oneof(point, gridPoint),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.nat(6),
        (polygon, p, t, edge) => {
          const vertices = polygon.map((v) => [v.latitude, v.longitude]);
          const box = boundsOf(polygon);
          const a = polygon[edge % polygon.length]!;
          const b = polygon[(edge + 1) % polygon.length]!;
          const onEdge = {
            latitude: a.latitude + (b.latitude - a.latitude) * t,
            longitude: a.longitude + (b.longitude - a.longitude) * t,
          };
          for (const q of [p, a, onEdge]) {
            if (pointInPolygon(q.latitude, q.longitude, vertices)) expect(inSome([box], q)).toBe(true);
          }
        },
      ),
      { numRuns: 20_000 },
    );
    const bowtie = [
      { latitude: 0, longitude: 0 },
      { latitude: 10, longitude: 10 },
      { latitude: 0, longitude: 10 },
      { latitude: 10, longitude: 0 },
    ];
    expect(boundsOf(bowtie)).toEqual({ south: -PAD, west: -PAD, north: 10 + PAD, east: 10 + PAD });
  });

  it('a $box: its box, or two beside the antimeridian, hold every point pointInBox accepts', () => {
    fc.assert(
      fc.property(
        fc.oneof(point, gridPoint),
        fc.oneof(point, gridPoint),
        fc.oneof(point, gridPoint),
        (a, b, p) => {
          const sw = { latitude: Math.min(a.latitude, b.latitude), longitude: a.longitude };
          const ne = { latitude: Math.max(a.latitude, b.latitude), longitude: b.longitude };
          if (pointInBox(p.latitude, p.longitude, sw, ne))
            expect(inSome(withinBoxBoxes(sw, ne), p)).toBe(true);
        },
      ),
      { numRuns: 20_000 },
    );
    expect(withinBoxBoxes({ latitude: -10, longitude: 170 }, { latitude: 10, longitude: -170 })).toEqual([
      { south: -10 - PAD, west: 170 - PAD, north: 10 + PAD, east: Number.POSITIVE_INFINITY },
      { south: -10 - PAD, west: Number.NEGATIVE_INFINITY, north: 10 + PAD, east: -170 + PAD },
    ]);
  });
});
