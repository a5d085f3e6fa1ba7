import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClassSchema } from '../src/kernel/schema.ts';
import { distanceRadians } from '../src/query/geo.ts';
import { compileMatcher } from '../src/query/match.ts';
import { parseWhere } from '../src/query/parse.ts';
import { postgresDialect } from '../src/storage/postgres/dialect.ts';
import type { SqlDriver } from '../src/storage/sql/driver.ts';
import { compiledWhere, found, gp, seedPlaces } from './helpers/geo.ts';
import { POSTGRES_TEST_BASE } from './helpers/postgres.ts';
import { seeded } from './helpers/seeded.ts';
import { freshSchema, ON_POSTGRES, schemaURI, startService, type TestService } from './helpers/service.ts';

/**
 * Geo with PostGIS, when the database has it: a GiST index on the geography of each native point
 * and st_dwithin (on a sphere, padded) before the exact haversine test of $centerSphere and
 * $nearSphere with $maxDistance.
 *
 * An extension is installed once per database, and the store looks for it in the whole database
 * (pg_extension), whatever schema it is in. Installed into the test database, it would change the
 * SQL of every service other test files start meanwhile (and dropped with a schema, break them):
 * these tests make a database of their own, install PostGIS into its schema `bds_postgis` (not on
 * the services' search_path, so the store must name it), and drop the database at the end.
 */
const BASE = POSTGRES_TEST_BASE;

async function postgisAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: BASE });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'postgis'");
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

const AVAILABLE = ON_POSTGRES && (await postgisAvailable());
if (!ON_POSTGRES) {
  console.log(
    'PostGIS tests skipped: they check the PostgreSQL store with PostGIS, and this run is on SQLite (npm run test:pg runs them)',
  );
} else if (!AVAILABLE) {
  console.log('PostGIS tests skipped: the PostgreSQL server has no postgis extension to install');
}

const DATABASE = `bds_postgis_${process.env.BDS_TEST_RUN ?? 'x'}_${process.pid}_${randomBytes(4).toString('hex')}`;
const DB_BASE = (() => {
  const url = new URL(BASE);
  url.pathname = `/${DATABASE}`;
  return url.toString();
})();

let admin: pg.Client;
let db: pg.Client;
beforeAll(async () => {
  if (!AVAILABLE) return;
  admin = new pg.Client({ connectionString: BASE });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${DATABASE}"`);
  db = new pg.Client({ connectionString: DB_BASE });
  await db.connect();
});
afterAll(async () => {
  if (!AVAILABLE) return;
  await db?.end();
  await admin.query(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`);
  await admin.end();
});

const driverOf = (t: TestService) => (t.service.core.store as unknown as { driver: SqlDriver }).driver;

const indexDefs = async (schema: string, table: string) =>
  (
    await db.query(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 AND indexname LIKE '%:geography:%' ORDER BY indexname`,
      [schema, table],
    )
  ).rows.map((r) => String(r.indexdef));

const geographyIndex = (schema: string, table: string, field: string) =>
  `CREATE INDEX "${table}:geography:${field}" ON ${schema}."${table}" USING gist (bds_postgis.geography(bds_postgis.st_setsrid(bds_postgis.st_makepoint("point:${field}"[0], "point:${field}"[1]), 4326)))`;

// One test at a time: the first installs PostGIS into the database the others use.
describe.skipIf(!AVAILABLE).sequential('geo with PostGIS (geography index, st_dwithin)', () => {
  it('adds a geography index to each GeoPoint field: at start for a class made before PostGIS, and with a new field', async () => {
    const schema = await freshSchema(DB_BASE);
    const services: TestService[] = [];
    try {
      const before = await startService({ databaseURI: schema.uri });
      services.push(before);
      // Without PostGIS the store's dialect is postgresDialect itself: its SQL is unchanged.
      expect(driverOf(before).dialect).toBe(postgresDialect);
      const made = await before.request('POST', '/schemas/Place', {
        as: 'master',
        body: { fields: { loc: { type: 'GeoPoint' }, area: { type: 'Polygon' }, name: { type: 'String' } } },
      });
      expect(made.status).toBe(200);
      expect(await indexDefs(schema.name, 'Place')).toEqual([]);
      await before.close();
      services.length = 0;

      await db.query('CREATE SCHEMA bds_postgis');
      await db.query('CREATE EXTENSION postgis SCHEMA bds_postgis');

      // Two instances at once: one adds the index under the start lock, the other finds it.
      const started = await Promise.all([
        startService({ databaseURI: schema.uri }),
        startService({ databaseURI: schema.uri }),
      ]);
      services.push(...started);
      for (const t of started) {
        const dialect = driverOf(t).dialect;
        expect(dialect).not.toBe(postgresDialect);
        expect(dialect.nativeGeo?.sphere?.radius).toBeCloseTo(6371008.7714, 3);
      }
      expect(await indexDefs(schema.name, 'Place')).toEqual([geographyIndex(schema.name, 'Place', 'loc')]);

      const t = started[0]!;
      const added = await t.request('PUT', '/schemas/Place', {
        as: 'master',
        body: { fields: { spot: { type: 'GeoPoint' } } },
      });
      expect(added.status).toBe(200);
      expect(await indexDefs(schema.name, 'Place')).toEqual([
        geographyIndex(schema.name, 'Place', 'loc'),
        geographyIndex(schema.name, 'Place', 'spot'),
      ]);
      const deleted = await t.request('PUT', '/schemas/Place', {
        as: 'master',
        body: { fields: { loc: { __op: 'Delete' } } },
      });
      expect(deleted.status).toBe(200);
      expect(await indexDefs(schema.name, 'Place')).toEqual([geographyIndex(schema.name, 'Place', 'spot')]);
      // A new class gets it with its table.
      const other = await t.request('POST', '/schemas/Other', {
        as: 'master',
        body: { fields: { where: { type: 'GeoPoint' } } },
      });
      expect(other.status).toBe(200);
      expect(await indexDefs(schema.name, 'Other')).toEqual([geographyIndex(schema.name, 'Other', 'where')]);
    } finally {
      for (const t of services) await t.close();
      await schema.drop();
    }
  });

  it('answers $centerSphere and $nearSphere with $maxDistance as the in-memory matcher does, poles, ±180 and half turns included', async () => {
    const t = await startService({ postgresTestBase: DB_BASE });
    try {
      const made = await t.request('POST', '/schemas/Place', {
        as: 'master',
        body: { fields: { loc: { type: 'GeoPoint' }, name: { type: 'String' } } },
      });
      expect(made.status).toBe(200);
      const random = seeded(20_250_301);
      const uniform = (min: number, max: number) => min + (max - min) * random();
      const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
      const centers = [
        gp(90, 0),
        gp(-90, 45),
        gp(88, 120),
        gp(-85.5, -60),
        gp(10, 180),
        gp(-20, -180),
        gp(45, 179.5),
        gp(0, 0),
        gp(33.3, -117.25),
      ];
      const antipode = (p: { latitude: number; longitude: number }) =>
        gp(-p.latitude, p.longitude > 0 ? p.longitude - 180 : p.longitude + 180);
      const points = [
        ...centers,
        ...centers.map(antipode),
        ...Array.from({ length: 250 }, () =>
          pick([
            () => gp(uniform(-90, 90), uniform(-180, 180)),
            () => gp(pick([1, -1]) * uniform(80, 90), uniform(-180, 180)),
            () => gp(uniform(-90, 90), pick([1, -1]) * uniform(175, 180)),
            () => {
              // Near an antipode of a center.
              const a = antipode(pick(centers));
              return gp(
                Math.max(-90, Math.min(90, a.latitude + uniform(-0.01, 0.01))),
                Math.max(-180, Math.min(180, a.longitude + uniform(-0.01, 0.01))),
              );
            },
          ])(),
        ),
      ];
      const bodies = points.map((loc, i) => ({ name: `p${i}`, loc }));
      bodies.push({ name: 'nowhere' } as never);
      const { schema, expected } = await seedPlaces(t, bodies);

      const radii = [
        0,
        1e-9,
        0.01,
        0.2,
        1,
        Math.PI / 2 - 1e-12,
        Math.PI / 2,
        2.5,
        Math.PI - 1e-3,
        Math.PI - 1e-6,
        Math.PI - 1e-7,
        Math.PI,
      ];
      const wheres: unknown[] = [];
      const exactReach: Array<[ReturnType<typeof gp>, number]> = [];
      for (const center of centers) {
        for (const radius of radii) {
          wheres.push({ loc: { $geoWithin: { $centerSphere: [center, radius] } } });
          wheres.push({ loc: { $nearSphere: center, $maxDistance: radius } });
        }
        // Radii reaching a stored point exactly (and a hair past it), the farthest ones included.
        for (let i = 0; i < 6; i++) {
          const edge = pick(points);
          const reach = distanceRadians(edge.latitude, edge.longitude, center.latitude, center.longitude);
          // Exactly the reach: the exact tests of the two engines (their sines) may round it apart.
          exactReach.push([center, reach]);
          wheres.push({ loc: { $geoWithin: { $centerSphere: [center, reach * (1 + 1e-13)] } } });
          wheres.push({ loc: { $nearSphere: center, $maxDistance: reach * (1 + 1e-13) } });
        }
      }
      let nonEmpty = 0;
      let partial = 0;
      for (const where of wheres) {
        const want = expected(where);
        expect(await found(t, where), JSON.stringify(where)).toEqual(want);
        if (want.length > 0) nonEmpty++;
        if (want.length > 0 && want.length < points.length) partial++;
      }
      // At exactly the reach, the prefilter keeps every row the SQL exact test (bds_distance) keeps:
      // the rows found are those of that test alone.
      for (const [center, reach] of exactReach) {
        const { rows: unfiltered } = await db.query(
          `SELECT "objectId" FROM "${t.schema}"."Place" AS p WHERE "${t.schema}".${postgresDialect.geoDistance('(p."point:loc")[1]', '(p."point:loc")[0]', '$1::float8', '$2::float8')} <= $3::float8`,
          [center.latitude, center.longitude, reach],
        );
        const where = { loc: { $geoWithin: { $centerSphere: [center, reach] } } };
        expect(await found(t, where), JSON.stringify(where)).toEqual(
          unfiltered.map((r) => r.objectId).sort(),
        );
      }
      expect(wheres).toHaveLength(centers.length * (radii.length + 6) * 2);
      expect(nonEmpty).toBeGreaterThanOrEqual(300);
      expect(partial).toBeGreaterThanOrEqual(200);

      // The prefilter is st_dwithin with the distance padded (capMeters), no box; none at a half turn.
      const dialect = driverOf(t).dialect;
      const over = compiledWhere(
        dialect,
        { loc: { $geoWithin: { $centerSphere: [gp(89, 0), 0.1] } } },
        schema,
        '"Place"',
      );
      expect(over.sql).toContain('"bds_postgis".st_dwithin("bds_postgis".geography(');
      expect(over.sql).not.toContain('<@');
      expect(over.values).toEqual([
        0,
        89,
        (0.1 + 1e-6) * dialect.nativeGeo!.sphere!.radius * (1 + 1e-9),
        89,
        0,
        0.1,
      ]);
      const half = compiledWhere(
        dialect,
        { loc: { $geoWithin: { $centerSphere: [gp(0, 0), Math.PI] } } },
        schema,
        '"Place"',
      );
      expect(half.sql).not.toContain('st_dwithin');
      expect(half.sql).not.toContain('<@');
    } finally {
      await t.close();
    }
  });

  it('serves $centerSphere over a pole and across ±180, and $nearSphere, from the geography index', async () => {
    const t = await startService({ postgresTestBase: DB_BASE });
    const client = new pg.Client({ connectionString: schemaURI(DB_BASE, t.schema!) });
    await client.connect();
    try {
      const made = await t.request('POST', '/schemas/Spot', {
        as: 'master',
        body: { fields: { loc: { type: 'GeoPoint' } } },
      });
      expect(made.status).toBe(200);
      await client.query(`
        INSERT INTO "Spot" ("objectId", "createdAt", "updatedAt", "loc")
        SELECT 's' || i, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z',
          format('{"latitude":%s,"longitude":%s}', (i % 179) - 89, (i * 37 % 359) - 179)
        FROM generate_series(1, 4000) AS i`);
      await client.query('ANALYZE "Spot"');
      await client.query('SET enable_seqscan = off');
      const schema: ClassSchema = (await t.request('GET', '/schemas/Spot', { as: 'master' })).json;
      const dialect = driverOf(t).dialect;
      const plan = async (where: unknown) => {
        const { sql, values } = compiledWhere(dialect, where, schema, '"Spot"');
        const { rows } = await client.query(`EXPLAIN SELECT * FROM "Spot" WHERE ${sql} LIMIT 100`, values);
        return rows.map((l) => l['QUERY PLAN']).join('\n');
      };
      const geographyIndex =
        /Bitmap Index Scan on "Spot:geography:loc"|Index Scan using "Spot:geography:loc"/;
      expect(await plan({ loc: { $geoWithin: { $centerSphere: [gp(89, 10), 0.05] } } })).toMatch(
        geographyIndex,
      );
      expect(await plan({ loc: { $geoWithin: { $centerSphere: [gp(-40, 179.9), 0.15] } } })).toMatch(
        geographyIndex,
      );
      expect(await plan({ loc: { $nearSphere: gp(10, -180), $maxDistance: 0.05 } })).toMatch(geographyIndex);
      // Boxes and polygons keep the native point index.
      expect(await plan({ loc: { $within: { $box: [gp(10, 10), gp(20, 20)] } } })).toMatch(
        /Bitmap Index Scan on "Spot:point:loc"|Index Scan using "Spot:point:loc"/,
      );
      // The store's own statements (prepared, parameters bound) find the same rows as the matcher.
      const rows = (await client.query('SELECT "objectId", loc FROM "Spot"')).rows.map((r) => ({
        objectId: r.objectId,
        loc: { __type: 'GeoPoint', ...JSON.parse(r.loc) },
      }));
      expect(rows).toHaveLength(4000);
      for (const where of [
        { loc: { $geoWithin: { $centerSphere: [gp(89, 10), 0.05] } } },
        { loc: { $geoWithin: { $centerSphere: [gp(-40, 179.9), 0.15] } } },
      ]) {
        const want = rows
          .filter(compileMatcher(parseWhere(where), schema))
          .map((r) => r.objectId)
          .sort();
        expect(want.length, JSON.stringify(rows.slice(0, 2))).toBeGreaterThan(0);
        expect(await found(t, where, 'Spot')).toEqual(want);
      }
    } finally {
      await client.end();
      await t.close();
    }
  });
});
