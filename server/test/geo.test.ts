import { expect } from 'vitest';
import { runScenarios, type Scenario } from './helpers/scenarios.ts';
import type { Credential, TestService } from './helpers/service.ts';

const gp = (latitude: number, longitude: number) => ({ __type: 'GeoPoint', latitude, longitude });

const PLACES: Record<string, [number, number]> = {
  sf: [37.7749, -122.4194],
  oak: [37.8044, -122.2712],
  la: [34.0522, -118.2437],
  ny: [40.7128, -74.006],
  tokyo: [35.6762, 139.6503],
  fiji: [-17.7, 179.9],
  samoa: [-13.8, -172.1],
};

/** Haversine distance in radians, to compute the expected distance order independently. */
function radians(a: [number, number], b: [number, number]): number {
  const r = Math.PI / 180;
  const dLat = (b[0] - a[0]) * r;
  const dLng = (b[1] - a[1]) * r;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a[0] * r) * Math.cos(b[0] * r) * Math.sin(dLng / 2) ** 2;
  return 2 * Math.atan2(Math.sqrt(h), Math.sqrt(1 - h));
}

const byDistanceFrom = (origin: [number, number]) =>
  Object.keys(PLACES).sort((x, y) => radians(origin, PLACES[x]!) - radians(origin, PLACES[y]!));

const labels = (res: { json: { results: Array<{ label: string }> } }) => res.json.results.map((r) => r.label);

function geo(
  name: string,
  where: unknown,
  expected: string[],
  extra: { ordered?: boolean; query?: Record<string, string>; className?: string; as?: Credential } = {},
): Scenario {
  return {
    name,
    method: 'GET',
    path: `/classes/${extra.className ?? 'Place'}`,
    as: extra.as,
    query: { where: JSON.stringify(where), ...extra.query },
    status: 200,
    after: async (_ctx, res) => {
      const got = labels(res);
      if (extra.ordered) expect(got).toEqual(expected);
      else expect(got.sort()).toEqual([...expected].sort());
    },
  };
}

function bad(name: string, where: unknown, text: string, className = 'Place', code = 102): Scenario {
  return {
    name,
    method: 'GET',
    path: `/classes/${className}`,
    query: { where: JSON.stringify(where) },
    status: 400,
    code,
    errorContains: text,
  };
}

const SF = gp(...PLACES.sf!);
const BAY_POLYGON = [gp(37, -123), gp(38.5, -123), gp(38.5, -122), gp(37, -122)];

const scenarios: Scenario[] = [
  // $nearSphere
  geo(
    '$nearSphere returns every located row, nearest first',
    { loc: { $nearSphere: SF } },
    byDistanceFrom(PLACES.sf!),
    {
      ordered: true,
    },
  ),
  geo(
    '$nearSphere from Tokyo orders by distance from Tokyo',
    { loc: { $nearSphere: gp(...PLACES.tokyo!) } },
    byDistanceFrom(PLACES.tokyo!),
    { ordered: true },
  ),
  geo('$nearSphere with limit takes the nearest', { loc: { $nearSphere: SF } }, ['sf', 'oak'], {
    ordered: true,
    query: { limit: '2' },
  }),
  geo('$nearSphere with skip', { loc: { $nearSphere: SF } }, ['la'], {
    ordered: true,
    query: { limit: '1', skip: '2' },
  }),
  geo(
    '$nearSphere + $maxDistance (radians)',
    { loc: { $nearSphere: SF, $maxDistance: 0.01 } },
    ['sf', 'oak'],
    {
      ordered: true,
    },
  ),
  geo(
    '$nearSphere + $maxDistanceInRadians',
    { loc: { $nearSphere: SF, $maxDistanceInRadians: 0.1 } },
    ['sf', 'oak', 'la'],
    {
      ordered: true,
    },
  ),
  geo(
    '$nearSphere + $maxDistanceInKilometers',
    { loc: { $nearSphere: SF, $maxDistanceInKilometers: 600 } },
    ['sf', 'oak', 'la'],
    {
      ordered: true,
    },
  ),
  geo(
    '$nearSphere + $maxDistanceInKilometers (small)',
    { loc: { $nearSphere: SF, $maxDistanceInKilometers: 10 } },
    ['sf'],
    {
      ordered: true,
    },
  ),
  geo(
    '$nearSphere + $maxDistanceInMiles',
    { loc: { $nearSphere: SF, $maxDistanceInMiles: 10 } },
    ['sf', 'oak'],
    {
      ordered: true,
    },
  ),
  geo(
    '$nearSphere + $maxDistanceInMiles (small)',
    { loc: { $nearSphere: SF, $maxDistanceInMiles: 5 } },
    ['sf'],
    {
      ordered: true,
    },
  ),
  geo(
    '$nearSphere with an explicit order uses that order',
    { loc: { $nearSphere: SF, $maxDistanceInKilometers: 600 } },
    ['sf', 'oak', 'la'],
    {
      ordered: true,
      query: { order: '-label' },
    },
  ),
  geo(
    '$nearSphere with another condition',
    { loc: { $nearSphere: SF, $maxDistanceInKilometers: 600 }, label: { $ne: 'sf' } },
    ['oak', 'la'],
    { ordered: true },
  ),
  geo(
    '$nearSphere accepts a point without __type',
    { loc: { $nearSphere: { latitude: 37.7749, longitude: -122.4194 }, $maxDistance: 0.01 } },
    ['sf', 'oak'],
  ),
  {
    name: '$nearSphere with count=1 counts the matches',
    method: 'GET',
    path: '/classes/Place',
    query: {
      where: JSON.stringify({ loc: { $nearSphere: SF, $maxDistanceInKilometers: 600 } }),
      count: '1',
      limit: '1',
    },
    status: 200,
    after: async (_ctx, res) => {
      expect(res.json.count).toBe(3);
      expect(labels(res)).toEqual(['sf']);
    },
  },
  geo(
    'the master key sees the hidden row near SF too',
    { loc: { $nearSphere: SF, $maxDistanceInKilometers: 1 } },
    ['sf', 'hidden'],
    { as: 'master' },
  ),
  geo(
    '$nearSphere inside a subquery filters the inner rows',
    {
      place: {
        $inQuery: { className: 'Place', where: { loc: { $nearSphere: SF, $maxDistanceInKilometers: 20 } } },
      },
    },
    ['visit-sf', 'visit-oak'],
    { className: 'Visit' },
  ),
  geo(
    '$nearSphere without a distance inside a subquery',
    { place: { $inQuery: { className: 'Place', where: { loc: { $nearSphere: SF } } } } },
    ['visit-sf', 'visit-oak', 'visit-ny'],
    { className: 'Visit', query: { order: 'label' } },
  ),
  // $within.$box
  geo('$within.$box', { loc: { $within: { $box: [gp(33, -123), gp(38, -118)] } } }, ['sf', 'oak', 'la']),
  geo('$within.$box across the antimeridian', { loc: { $within: { $box: [gp(-20, 170), gp(-10, -170)] } } }, [
    'fiji',
    'samoa',
  ]),
  geo('$within.$box with nothing inside', { loc: { $within: { $box: [gp(0, 0), gp(1, 1)] } } }, []),
  // Corners given north-east first are read the other way round, as the incumbent does.
  geo('$within.$box north-east corner first', { loc: { $within: { $box: [gp(38, -118), gp(33, -123)] } } }, [
    'sf',
    'oak',
    'la',
  ]),
  geo(
    '$within.$box across the antimeridian, north-east corner first',
    { loc: { $within: { $box: [gp(-10, -170), gp(-20, 170)] } } },
    ['fiji', 'samoa'],
  ),
  // $geoWithin
  geo('$geoWithin.$polygon (GeoPoints)', { loc: { $geoWithin: { $polygon: BAY_POLYGON } } }, ['sf', 'oak']),
  geo(
    '$geoWithin.$polygon (a Polygon value)',
    {
      loc: {
        $geoWithin: {
          $polygon: {
            __type: 'Polygon',
            coordinates: [
              [37, -123],
              [38.5, -123],
              [38.5, -122],
              [37, -122],
            ],
          },
        },
      },
    },
    ['sf', 'oak'],
  ),
  geo(
    '$geoWithin.$polygon (a triangle)',
    { loc: { $geoWithin: { $polygon: [gp(30, -125), gp(45, -125), gp(30, -100)] } } },
    ['sf', 'oak', 'la'],
  ),
  geo(
    '$geoWithin.$centerSphere (GeoPoint, radians)',
    { loc: { $geoWithin: { $centerSphere: [SF, 0.01] } } },
    ['sf', 'oak'],
  ),
  geo(
    '$geoWithin.$centerSphere ([longitude, latitude], radians)',
    { loc: { $geoWithin: { $centerSphere: [[-122.4194, 37.7749], 600 / 6371] } } },
    ['sf', 'oak', 'la'],
  ),
  // Equality on a GeoPoint.
  geo('GeoPoint equality', { loc: SF }, ['sf']),
  geo(
    'rows without a location never match a geo query',
    { loc: { $within: { $box: [gp(-90, -180), gp(90, 180)] } } },
    ['sf', 'oak', 'la', 'ny', 'tokyo', 'fiji', 'samoa'],
  ),
  // $geoIntersects on a Polygon field.
  geo('$geoIntersects.$point', { shape: { $geoIntersects: { $point: SF } } }, ['bay'], { className: 'Area' }),
  geo(
    '$geoIntersects.$point inside two polygons',
    { shape: { $geoIntersects: { $point: gp(37.5, -122.5) } } },
    ['bay', 'big'],
    {
      className: 'Area',
    },
  ),
  geo(
    '$geoIntersects.$point outside every polygon',
    { shape: { $geoIntersects: { $point: gp(0, 0) } } },
    [],
    {
      className: 'Area',
    },
  ),
  geo(
    'Polygon equality',
    {
      shape: {
        __type: 'Polygon',
        coordinates: [
          [37, -123],
          [38.5, -123],
          [38.5, -122],
          [37, -122],
        ],
      },
    },
    ['bay'],
    {
      className: 'Area',
    },
  ),
  // Bad geo queries.
  bad('$maxDistance without $nearSphere', { loc: { $maxDistance: 1 } }, 'needs $nearSphere'),
  bad('a negative $maxDistance', { loc: { $nearSphere: SF, $maxDistance: -1 } }, 'takes a number >= 0'),
  bad(
    'a non-numeric $maxDistanceInKilometers',
    { loc: { $nearSphere: SF, $maxDistanceInKilometers: '5' } },
    'takes a number >= 0',
  ),
  bad('a latitude out of range', { loc: { $nearSphere: gp(91, 0) } }, 'latitude in [-90, 90]'),
  bad(
    'a longitude out of range',
    { loc: { $within: { $box: [gp(0, 0), gp(1, 181)] } } },
    'longitude in [-180, 180]',
  ),
  bad(
    '$nearSphere with a non-GeoPoint typed value',
    { loc: { $nearSphere: { __type: 'Date', iso: '2020-01-01' } } },
    'expected a GeoPoint',
  ),
  bad('$box with one corner', { loc: { $within: { $box: [SF] } } }, '$box'),
  bad('$within without $box', { loc: { $within: { $polygon: BAY_POLYGON } } }, '$box'),
  // A malformed polygon is 107 (INVALID_JSON), as the incumbent answers withinPolygon.
  bad(
    '$geoWithin.$polygon with two points',
    { loc: { $geoWithin: { $polygon: [SF, gp(0, 0)] } } },
    'at least 3',
    'Place',
    107,
  ),
  bad(
    '$geoWithin with neither $polygon nor $centerSphere',
    { loc: { $geoWithin: { $box: [] } } },
    '$polygon or $centerSphere',
  ),
  bad('$centerSphere without a radius', { loc: { $geoWithin: { $centerSphere: [SF] } } }, '$centerSphere'),
  bad('$geoIntersects without $point', { shape: { $geoIntersects: {} } }, '$point', 'Area'),
  bad('$geoIntersects on a GeoPoint field', { loc: { $geoIntersects: { $point: SF } } }, 'Polygon'),
  bad('$nearSphere on a String field', { label: { $nearSphere: SF } }, 'need a GeoPoint field'),
  bad(
    '$within on a Polygon field',
    { shape: { $within: { $box: [gp(0, 0), gp(1, 1)] } } },
    'need a GeoPoint field',
    'Area',
  ),
  bad('ordering comparison on a GeoPoint', { loc: { $gt: SF } }, 'compared for equality'),
];

async function seed(t: TestService, className: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  if (res.status !== 201) throw new Error(`seed ${className} failed: ${res.status} ${res.text}`);
  return res.json.objectId as string;
}

runScenarios('geo queries', scenarios, {
  setup: async (ctx) => {
    for (const [label, [lat, lng]] of Object.entries(PLACES)) {
      const id = await seed(ctx.t, 'Place', { label, loc: gp(lat, lng) });
      if (['sf', 'oak', 'ny'].includes(label)) {
        await seed(ctx.t, 'Visit', {
          label: `visit-${label}`,
          place: { __type: 'Pointer', className: 'Place', objectId: id },
        });
      }
    }
    const nowhere = await seed(ctx.t, 'Place', { label: 'nowhere' });
    await seed(ctx.t, 'Visit', {
      label: 'visit-nowhere',
      place: { __type: 'Pointer', className: 'Place', objectId: nowhere },
    });
    await seed(ctx.t, 'Place', { label: 'hidden', loc: gp(37.775, -122.4195), ACL: {} });
    await seed(ctx.t, 'Area', {
      label: 'bay',
      shape: {
        __type: 'Polygon',
        coordinates: [
          [37, -123],
          [38.5, -123],
          [38.5, -122],
          [37, -122],
        ],
      },
    });
    await seed(ctx.t, 'Area', {
      label: 'big',
      shape: {
        __type: 'Polygon',
        coordinates: [
          [30, -125],
          [37.6, -125],
          [37.6, -110],
          [30, -110],
        ],
      },
    });
    await seed(ctx.t, 'Area', { label: 'none' });
  },
});
