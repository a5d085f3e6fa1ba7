import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTransfer } from '../src/cli.ts';
import type { ClassSchema } from '../src/kernel/schema.ts';
import { distanceRadians } from '../src/query/geo.ts';
import { postgresDialect } from '../src/storage/postgres/dialect.ts';
import { compiledWhere, found, gp, seedPlaces } from './helpers/geo.ts';
import { POSTGRES_TEST_BASE } from './helpers/postgres.ts';
import { seeded } from './helpers/seeded.ts';
import { freshSchema, ON_POSTGRES, schemaURI, startService, type TestService } from './helpers/service.ts';

/**
 * Geo on PostgreSQL's own types: each top-level GeoPoint and Polygon field has a STORED generated
 * point or polygon column beside its JSON, GiST-indexed, which geo queries read and prefilter by.
 * These tests read PostgreSQL's catalog and plans, so they run in the PostgreSQL run only
 * (`npm run test:pg`); the answers of every geo operator on both stores are geo.test.ts's.
 */
const SKIPPED =
  'PostgreSQL geo tests skipped: they check native point and polygon columns, GiST indexes and ' +
  'plans of the PostgreSQL store, and this run is on SQLite (npm run test:pg runs them)';
if (!ON_POSTGRES) console.log(SKIPPED);

const BASE = POSTGRES_TEST_BASE;

let admin: pg.Client;
beforeAll(async () => {
  if (!ON_POSTGRES) return;
  admin = new pg.Client({ connectionString: BASE });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
});

const rows = async (sql: string, params: unknown[] = []) => (await admin.query(sql, params)).rows;
const polygon = (coordinates: number[][]) => ({ __type: 'Polygon', coordinates });

/** The generated columns of a table (every column whose name holds a colon, which no field's can). */
const nativeColumns = (schema: string, table: string) =>
  rows(
    `SELECT column_name, udt_name, is_generated, generation_expression FROM information_schema.columns
     WHERE table_schema = $1 AND table_name = $2 AND column_name LIKE '%:%' ORDER BY column_name`,
    [schema, table],
  );

const gistIndexes = async (schema: string, table: string) =>
  (
    await rows(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 AND indexdef LIKE '%USING gist%' ORDER BY indexname`,
      [schema, table],
    )
  ).map((r) => String(r.indexdef));

/** The functions of the store's schema, named with it (the catalog is read from another search_path). */
const placeColumns = (schema: string) => [
  {
    column_name: 'point:loc',
    udt_name: 'point',
    is_generated: 'ALWAYS',
    generation_expression: `${schema}.bds_geo_point(loc)`,
  },
  {
    column_name: 'polygon:area',
    udt_name: 'polygon',
    is_generated: 'ALWAYS',
    generation_expression: `${schema}.bds_geo_polygon(area)`,
  },
];

const placeIndexes = (schema: string) => [
  `CREATE INDEX "Place:point:loc" ON ${schema}."Place" USING gist ("point:loc")`,
  `CREATE INDEX "Place:polygon:area" ON ${schema}."Place" USING gist (box("polygon:area"))`,
];

async function createPlace(t: TestService): Promise<void> {
  const made = await t.request('POST', '/schemas/Place', {
    as: 'master',
    body: {
      fields: {
        name: { type: 'String' },
        loc: { type: 'GeoPoint' },
        area: { type: 'Polygon' },
        info: { type: 'Object' },
      },
    },
  });
  expect(made.status).toBe(200);
}

async function post(t: TestService, className: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/classes/${className}`, { as: 'master', body });
  expect(res.status).toBe(201);
  return res.json.objectId;
}

describe.skipIf(!ON_POSTGRES)("geo on PostgreSQL's own types (point, polygon, GiST)", () => {
  it('keeps a generated point and polygon column, GiST-indexed, beside each GeoPoint and Polygon field, and drops them with it', async () => {
    const t = await startService();
    try {
      const schema = t.schema!;
      await createPlace(t);
      expect(await nativeColumns(schema, 'Place')).toEqual(placeColumns(schema));
      expect(await gistIndexes(schema, 'Place')).toEqual(placeIndexes(schema));

      // The native values are the very numbers written: (longitude, latitude).
      const id = await post(t, 'Place', {
        loc: gp(37.7749, -122.4194),
        // Closed, as a Polygon is stored (its first vertex again at the end).
        area: polygon([
          [1e-7, -0.5],
          [10, 20.25],
          [-3.125, 179.9999999],
          [1e-7, -0.5],
        ]),
      });
      expect(
        await rows(
          `SELECT "point:loc"[0] AS x, "point:loc"[1] AS y, "polygon:area"::text AS area FROM "${schema}"."Place" WHERE "objectId" = $1`,
          [id],
        ),
      ).toEqual([
        { x: -122.4194, y: 37.7749, area: '((-0.5,1e-07),(20.25,10),(179.9999999,-3.125),(-0.5,1e-07))' },
      ]);
      // A write that clears or changes the field changes its native column.
      await t.request('PUT', `/classes/Place/${id}`, {
        as: 'master',
        body: { loc: gp(-90, 180), area: { __op: 'Delete' } },
      });
      expect(
        await rows(
          `SELECT "point:loc"::text AS loc, "polygon:area" AS area FROM "${schema}"."Place" WHERE "objectId" = $1`,
          [id],
        ),
      ).toEqual([{ loc: '(180,-90)', area: null }]);

      // A field added by a schema change, and one added by a write.
      const added = await t.request('PUT', '/schemas/Place', {
        as: 'master',
        body: { fields: { spot: { type: 'GeoPoint' } } },
      });
      expect(added.status).toBe(200);
      await post(t, 'Place', {
        zone: polygon([
          [0, 0],
          [0, 1],
          [1, 1],
        ]),
      });
      expect((await nativeColumns(schema, 'Place')).map((c) => c.column_name)).toEqual([
        'point:loc',
        'point:spot',
        'polygon:area',
        'polygon:zone',
      ]);
      expect(await gistIndexes(schema, 'Place')).toEqual([
        placeIndexes(schema)[0],
        `CREATE INDEX "Place:point:spot" ON ${schema}."Place" USING gist ("point:spot")`,
        placeIndexes(schema)[1],
        `CREATE INDEX "Place:polygon:zone" ON ${schema}."Place" USING gist (box("polygon:zone"))`,
      ]);

      // Deleting the fields drops their native columns and indexes (before their own columns).
      const deleted = await t.request('PUT', '/schemas/Place', {
        as: 'master',
        body: { fields: { loc: { __op: 'Delete' }, area: { __op: 'Delete' }, zone: { __op: 'Delete' } } },
      });
      expect(deleted.status).toBe(200);
      expect((await nativeColumns(schema, 'Place')).map((c) => c.column_name)).toEqual(['point:spot']);
      expect(await gistIndexes(schema, 'Place')).toEqual([
        `CREATE INDEX "Place:point:spot" ON ${schema}."Place" USING gist ("point:spot")`,
      ]);
      const left = await rows(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'Place' AND column_name IN ('loc', 'area', 'zone')`,
        [schema],
      );
      expect(left).toEqual([]);
      // Added again, the field gets its native column again.
      await t.request('PUT', '/schemas/Place', {
        as: 'master',
        body: { fields: { loc: { type: 'GeoPoint' } } },
      });
      expect((await nativeColumns(schema, 'Place')).map((c) => c.column_name)).toEqual([
        'point:loc',
        'point:spot',
      ]);
      // A class deleted with its geo fields leaves nothing behind.
      expect((await t.request('DELETE', '/purge/Place', { as: 'master' })).status).toBe(200);
      expect((await t.request('DELETE', '/schemas/Place', { as: 'master' })).status).toBe(200);
      expect(await nativeColumns(schema, 'Place')).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('gives a table of the earlier layout its native columns when instances start on it, two at once', async () => {
    const db = await freshSchema(BASE);
    const services: TestService[] = [];
    try {
      const first = await startService({ databaseURI: db.uri });
      services.push(first);
      await createPlace(first);
      const inside = await post(first, 'Place', {
        loc: gp(10, 20),
        area: polygon([
          [0, 0],
          [0, 10],
          [10, 10],
          [10, 0],
          [0, 0],
        ]),
      });
      await post(first, 'Place', { loc: gp(-10, -20) });
      await post(first, 'Place', { name: 'nowhere' });
      await first.close();
      services.length = 0;

      // The layout before native geometry: JSON columns only.
      await admin.query(
        `ALTER TABLE "${db.name}"."Place" DROP COLUMN "point:loc", DROP COLUMN "polygon:area"`,
      );
      expect(await nativeColumns(db.name, 'Place')).toEqual([]);
      expect(await gistIndexes(db.name, 'Place')).toEqual([]);

      const started = await Promise.all([
        startService({ databaseURI: db.uri }),
        startService({ databaseURI: db.uri }),
      ]);
      services.push(...started);
      expect(await nativeColumns(db.name, 'Place')).toEqual(placeColumns(db.name));
      expect(await gistIndexes(db.name, 'Place')).toEqual(placeIndexes(db.name));
      expect(
        await rows(
          `SELECT "point:loc"::text AS loc, "polygon:area"::text AS area FROM "${db.name}"."Place" ORDER BY "point:loc"[0] NULLS LAST`,
        ),
      ).toEqual([
        { loc: '(-20,-10)', area: null },
        { loc: '(20,10)', area: '((0,0),(10,0),(10,10),(0,10),(0,0))' },
        { loc: null, area: null },
      ]);
      for (const t of started) {
        expect(await found(t, { loc: { $within: { $box: [gp(0, 0), gp(20, 30)] } } })).toEqual([inside]);
        expect(await found(t, { area: { $geoIntersects: { $point: gp(5, 5) } } })).toEqual([inside]);
      }
      // A start on the current layout changes nothing.
      const again = await startService({ databaseURI: db.uri });
      services.push(again);
      expect(await gistIndexes(db.name, 'Place')).toEqual(placeIndexes(db.name));

      // An index dropped by hand, its column kept: the next start makes it again.
      await admin.query(`DROP INDEX "${db.name}"."Place:point:loc"`);
      expect(await gistIndexes(db.name, 'Place')).toEqual(placeIndexes(db.name).slice(1));
      services.push(await startService({ databaseURI: db.uri }));
      expect(await gistIndexes(db.name, 'Place')).toEqual(placeIndexes(db.name));
    } finally {
      for (const t of services) await t.close();
      await db.drop();
    }
  });

  it('never answers a native column as a field: GET, find, keys, updates, export', async () => {
    const t = await startService();
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-pg-geo-'));
    try {
      await createPlace(t);
      const loc = gp(48.8566, 2.3522);
      const area = polygon([
        [48, 2],
        [49, 2],
        [49, 3],
        [48, 2],
      ]);
      const id = await post(t, 'Place', { name: 'Paris', loc, area });
      const fieldsOf = (row: Record<string, unknown>) => Object.keys(row).sort();
      const got = await t.request('GET', `/classes/Place/${id}`, { as: 'master' });
      expect(got.json).toEqual({
        objectId: id,
        createdAt: got.json.createdAt,
        updatedAt: got.json.updatedAt,
        name: 'Paris',
        loc,
        area,
      });
      const find = await t.request('GET', '/classes/Place', {
        as: 'master',
        query: { where: { loc: { $nearSphere: gp(48, 2), $maxDistanceInKilometers: 500 } } },
      });
      expect(find.json.results).toEqual([got.json]);
      const intersects = await t.request('GET', '/classes/Place', {
        as: 'master',
        query: { where: { area: { $geoIntersects: { $point: gp(48.9, 2.5) } } }, keys: 'loc' },
      });
      expect(intersects.json.results.map(fieldsOf)).toEqual([['createdAt', 'loc', 'objectId', 'updatedAt']]);
      // A native column's name is no field name: refused as a key, as a where key, and as a field.
      const byNativeName = await t.request('GET', '/classes/Place', {
        as: 'master',
        query: { keys: 'point:loc' },
      });
      expect(byNativeName.status).toBe(400);
      const whereNative = await t.request('GET', '/classes/Place', {
        as: 'master',
        query: { where: { 'point:loc': { $exists: true } } },
      });
      expect(whereNative.status).toBe(400);
      const writeNative = await t.request('POST', '/classes/Place', {
        as: 'master',
        body: { 'point:loc': 1 },
      });
      expect(writeNative.status).toBe(400);
      // An update answers the row from RETURNING *: its hooks' view of the row is the fields only.
      const moved = await t.request('PUT', `/classes/Place/${id}`, { as: 'master', body: { loc: gp(1, 2) } });
      expect(moved.status).toBe(200);
      expect(fieldsOf(moved.json)).toEqual(['updatedAt']);
      const after = await t.request('GET', `/classes/Place/${id}`, { as: 'master' });
      expect(fieldsOf(after.json)).toEqual(['area', 'createdAt', 'loc', 'name', 'objectId', 'updatedAt']);
      expect(after.json.loc).toEqual(gp(1, 2));

      const file = path.join(dir, 'export.jsonl');
      const code = await runTransfer([
        'export',
        '--out',
        file,
        '--data-dir',
        t.dataDir,
        '--database-url',
        schemaURI(BASE, t.schema!),
      ]);
      expect(code).toBe(0);
      const lines = readFileSync(file, 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
      const exported = lines.filter((l) => l.className === 'Place');
      expect(exported.map((l) => l.type)).toEqual(['schema', 'row']);
      expect(Object.keys(exported[0].fields).sort()).toEqual([
        'ACL',
        'area',
        'createdAt',
        'info',
        'loc',
        'name',
        'objectId',
        'updatedAt',
      ]);
      expect(exported[1].row).toEqual(after.json);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers every geo operator as the in-memory matcher does, on hundreds of random rows and queries', async () => {
    const t = await startService();
    try {
      await createPlace(t);
      const random = seeded(20_240_611);
      const uniform = (min: number, max: number) => min + (max - min) * random();
      const whole = (min: number, max: number) => Math.floor(uniform(min, max + 1));
      const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
      // A 10-degree grid over two small regions (one at 180), so that points fall on the vertices
      // and edges of the grid shapes below often; 5-degree steps hit the middles of their edges.
      const gridLongitudes = [-30, -20, -10, 0, 10, 20, 30, 150, 160, 170, 180];
      const gridPoint = () => gp(whole(-2, 2) * 10, pick(gridLongitudes));
      const halfGridPoint = () =>
        gp(whole(-4, 5) * 5, Math.min(180, pick(gridLongitudes) + pick([-5, 0, 5])));
      const points = [
        () => gp(uniform(-90, 90), uniform(-180, 180)),
        () => gp(uniform(-90, 90), uniform(-180, 180)),
        gridPoint,
        halfGridPoint,
        () => gp(pick([90, -90]), uniform(-180, 180)),
        () => gp(pick([1, -1]) * uniform(88, 90), uniform(-180, 180)),
        () => gp(uniform(-90, 90), pick([180, -180])),
        () => gp(uniform(-90, 90), pick([1, -1]) * uniform(178, 180)),
      ];
      const randomPoint = () => pick(points)();
      const gridPolygon = () => {
        const lat = whole(-2, 1) * 10;
        const lng = pick([-30, -20, -10, 0, 10, 150, 160]);
        return pick([
          [
            [lat, lng],
            [lat + 10, lng],
            [lat + 10, lng + 10],
            [lat, lng + 10],
          ],
          [
            [lat, lng],
            [lat + 20, lng + 10],
            [lat, lng + 20],
          ],
          // A bowtie: its edges cross at (lat + 5, lng + 5).
          [
            [lat, lng],
            [lat + 10, lng + 10],
            [lat, lng + 10],
            [lat + 10, lng],
          ],
          // Concave: a notch down to (lat + 5, lng + 10).
          [
            [lat, lng],
            [lat + 10, lng],
            [lat + 5, lng + 10],
            [lat + 10, lng + 20],
            [lat, lng + 20],
          ],
        ]);
      };
      const randomPolygon = () => {
        const lat = uniform(-70, 70);
        const lng = uniform(-160, 160);
        return Array.from({ length: whole(3, 6) }, () => [lat + uniform(-20, 20), lng + uniform(-20, 20)]);
      };
      const anyPolygon = () => (random() < 0.5 ? gridPolygon() : randomPolygon());

      // Rows: a point (or none), a polygon (or none), sometimes a point below an Object.
      const bodies: Array<Record<string, unknown>> = [];
      for (let i = 0; i < 320; i++) {
        const body: Record<string, unknown> = { name: `r${i}` };
        if (random() < 0.9) body.loc = randomPoint();
        if (random() < 0.7) body.area = polygon(anyPolygon());
        if (random() < 0.3) {
          const p = randomPoint();
          body.info = {
            loc: random() < 0.9 ? { latitude: p.latitude, longitude: p.longitude } : { latitude: 'north' },
          };
        }
        bodies.push(body);
      }
      const { expected } = await seedPlaces(t, bodies);
      const storedPolygons = bodies.flatMap((b) =>
        b.area ? [(b.area as { coordinates: number[][] }).coordinates] : [],
      );
      const storedPoints = bodies.flatMap((b) => (b.loc ? [b.loc as ReturnType<typeof gp>] : []));

      const boxCorners = (): [ReturnType<typeof gp>, ReturnType<typeof gp>] => {
        const corner = pick([
          gridPoint,
          () => gp(uniform(-90, 90), uniform(-180, 180)),
          () => pick(storedPoints),
        ]);
        const a = corner();
        const b = corner();
        return [
          gp(Math.min(a.latitude, b.latitude), a.longitude),
          gp(Math.max(a.latitude, b.latitude), b.longitude),
        ];
      };
      const queries: Array<{ family: string; where: unknown }> = [];
      const add = (family: string, where: unknown) => queries.push({ family, where });
      for (let i = 0; i < 30; i++) add('$within $box', { loc: { $within: { $box: boxCorners() } } });
      // Across the antimeridian: the south-west corner east of the north-east one.
      add('$within $box', { loc: { $within: { $box: [gp(-60, 170), gp(60, -170)] } } });
      add('$within $box', { loc: { $within: { $box: [gp(-90, 180), gp(90, -180)] } } });
      add('$within $box', { loc: { $within: { $box: [gp(80, 0), gp(90, 10)] } } });
      for (let i = 0; i < 40; i++) {
        const vertices =
          i % 4 === 3
            ? Array.from({ length: whole(3, 5) }, () => pick(storedPoints))
            : anyPolygon().map(([lat, lng]) => gp(lat!, lng!));
        add('$geoWithin $polygon', { loc: { $geoWithin: { $polygon: vertices } } });
      }
      const centers = [
        randomPoint,
        () => gp(uniform(-90, 90), uniform(-180, 180)),
        () => gp(pick([1, -1]) * uniform(80, 90), uniform(-180, 180)),
        () => gp(uniform(-60, 60), pick([1, -1]) * uniform(170, 180)),
      ];
      const radius = () => pick([uniform(0, 0.05), uniform(0, 0.4), uniform(0.3, 1.5), uniform(1.5, 3.2)]);
      for (let i = 0; i < 40; i++) {
        add('$geoWithin $centerSphere', {
          loc: { $geoWithin: { $centerSphere: [pick(centers)(), radius()] } },
        });
      }
      for (let i = 0; i < 15; i++) {
        const center = pick(centers)();
        const edge = pick(storedPoints);
        const reach = distanceRadians(edge.latitude, edge.longitude, center.latitude, center.longitude);
        add('$geoWithin $centerSphere', {
          loc: { $geoWithin: { $centerSphere: [center, reach * (1 + 1e-13)] } },
        });
      }
      for (let i = 0; i < 30; i++) {
        add('$nearSphere $maxDistance', {
          loc: { $nearSphere: pick(centers)(), $maxDistance: radius() },
        });
      }
      add('$nearSphere $maxDistance', { loc: { $nearSphere: gp(0, 0), $maxDistanceInKilometers: 3000 } });
      const onShapes = [
        randomPoint,
        gridPoint,
        halfGridPoint,
        () => gp(whole(-2, 1) * 10 + 5, pick([-30, -20, -10, 0, 10, 150, 160]) + 5),
        // A vertex of a stored polygon, the middle of one of its edges, or a point along one.
        () => {
          const coordinates = pick(storedPolygons);
          const i = whole(0, coordinates.length - 1);
          const [a, b] = [coordinates[i]!, coordinates[(i + 1) % coordinates.length]!];
          const t = pick([0, 0.5, random()]);
          return gp(a[0]! + (b[0]! - a[0]!) * t, a[1]! + (b[1]! - a[1]!) * t);
        },
      ];
      for (let i = 0; i < 80; i++) {
        add('$geoIntersects $point', { area: { $geoIntersects: { $point: pick(onShapes)() } } });
      }
      // Below an Object: the JSON path.
      for (let i = 0; i < 5; i++) {
        add('below an Object', { 'info.loc': { $within: { $box: boxCorners() } } });
        add('below an Object', {
          'info.loc': { $geoWithin: { $centerSphere: [pick(centers)(), radius()] } },
        });
      }

      const matchedPerFamily = new Map<string, number>();
      for (const { family, where } of queries) {
        const want = expected(where);
        expect(await found(t, where), JSON.stringify(where)).toEqual(want);
        matchedPerFamily.set(family, (matchedPerFamily.get(family) ?? 0) + (want.length > 0 ? 1 : 0));
      }
      // Enough of each kind of query found rows for the comparison to mean something.
      for (const family of new Set(queries.map((q) => q.family))) {
        expect(matchedPerFamily.get(family), family).toBeGreaterThanOrEqual(5);
      }

      // $nearSphere alone: every located row, nearest first.
      for (const center of [gp(0, 0), gp(89.5, 179.9), gp(-45, -179.5)]) {
        const res = await t.request('GET', '/classes/Place', {
          as: 'master',
          query: { where: { loc: { $nearSphere: center } }, limit: 1000 },
        });
        const order: Array<Record<string, any>> = res.json.results;
        expect(order.map((r) => r.objectId).sort()).toEqual(expected({ loc: { $nearSphere: center } }));
        const distances = order.map((r) =>
          distanceRadians(r.loc.latitude, r.loc.longitude, center.latitude, center.longitude),
        );
        // Rows at one place (a pole, say) are as far as each other; the engines' sines may order
        // such ties either way, a few units of the last place apart.
        for (let i = 1; i < distances.length; i++) {
          expect(distances[i]! + 1e-12).toBeGreaterThanOrEqual(distances[i - 1]!);
        }
      }
    } finally {
      await t.close();
    }
  });

  it('serves $within, $centerSphere, $nearSphere and $geoIntersects from the GiST indexes', async () => {
    const t = await startService();
    const schemaName = t.schema!;
    const client = new pg.Client({ connectionString: schemaURI(BASE, schemaName) });
    await client.connect();
    try {
      const made = await t.request('POST', '/schemas/Spot', {
        as: 'master',
        body: { fields: { loc: { type: 'GeoPoint' }, area: { type: 'Polygon' }, info: { type: 'Object' } } },
      });
      expect(made.status).toBe(200);
      await client.query(`
        INSERT INTO "Spot" ("objectId", "createdAt", "updatedAt", "loc", "area")
        SELECT 's' || i, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z',
          format('{"latitude":%s,"longitude":%s}', (i % 179) - 89, (i * 37 % 359) - 179),
          format('[[%s,%s],[%s,%s],[%s,%s]]', (i % 170) - 85, (i * 7 % 350) - 175, (i % 170) - 84,
            (i * 7 % 350) - 175, (i % 170) - 85, (i * 7 % 350) - 174)
        FROM generate_series(1, 4000) AS i`);
      await client.query('ANALYZE "Spot"');
      await client.query('SET enable_seqscan = off');
      const schema: ClassSchema = (await t.request('GET', '/schemas/Spot', { as: 'master' })).json;
      /** The plan of the find the store would run for `where`. */
      const plan = async (where: unknown) => {
        const { sql, values } = compiledWhere(postgresDialect, where, schema, '"Spot"');
        const { rows: lines } = await client.query(
          `EXPLAIN SELECT * FROM "Spot" WHERE ${sql} LIMIT 100`,
          values,
        );
        return { sql, plan: lines.map((l) => l['QUERY PLAN']).join('\n') };
      };
      const pointIndex = /Bitmap Index Scan on "Spot:point:loc"|Index Scan using "Spot:point:loc"/;
      const box = await plan({ loc: { $within: { $box: [gp(10, 10), gp(20, 20)] } } });
      expect(box.plan).toMatch(pointIndex);
      const across = await plan({ loc: { $within: { $box: [gp(10, 170), gp(20, -170)] } } });
      expect(across.plan).toMatch(/BitmapOr/);
      expect(across.plan).toMatch(pointIndex);
      const sphere = await plan({ loc: { $geoWithin: { $centerSphere: [gp(40, -100), 0.1] } } });
      expect(sphere.plan).toMatch(pointIndex);
      const sphereAcross = await plan({ loc: { $geoWithin: { $centerSphere: [gp(40, 179), 0.1] } } });
      expect(sphereAcross.plan).toMatch(/BitmapOr/);
      const near = await plan({ loc: { $nearSphere: gp(40, -100), $maxDistance: 0.1 } });
      expect(near.plan).toMatch(pointIndex);
      const within = await plan({
        loc: { $geoWithin: { $polygon: [gp(0, 0), gp(10, 0), gp(5, 10)] } },
      });
      expect(within.plan).toMatch(pointIndex);
      const intersects = await plan({ area: { $geoIntersects: { $point: gp(5, 5) } } });
      expect(intersects.plan).toMatch(
        /Bitmap Index Scan on "Spot:polygon:area"|Index Scan using "Spot:polygon:area"/,
      );
      // The native column, not the JSON, gives the coordinates; below an Object the JSON does.
      expect(box.sql).toContain('("Spot"."point:loc")[1] BETWEEN');
      const nested = await plan({ 'info.loc': { $within: { $box: [gp(10, 10), gp(20, 20)] } } });
      expect(nested.sql).not.toContain(':loc');
      expect(nested.plan).not.toMatch(/Index/);
    } finally {
      await client.end();
      await t.close();
    }
  });
});
