import { randomBytes } from "node:crypto";
import pg from "pg";
import { ensurePgSchema } from "../../src/journal/pg/schema.js";

/**
 * The PostgreSQL the tests use: HARNESS_TEST_DATABASE_URL, which test/support/global-database.ts
 * sets to an embedded server when it was not set. Tests that need it fail, never skip, when it
 * cannot be reached: the connection error names this variable.
 */
function testDatabaseUrl(): string {
  const url = process.env.HARNESS_TEST_DATABASE_URL;
  if (!url) {
    throw new Error(
      "HARNESS_TEST_DATABASE_URL is not set: run the tests with vitest (its global setup starts an embedded PostgreSQL)",
    );
  }
  return url;
}
export const TEST_DATABASE_URL = testDatabaseUrl();

export interface TempPgSchema {
  /** A pool whose connections use the schema (search_path). */
  pool: pg.Pool;
  schema: string;
  /** A connection URL that selects the schema, for a CLI's `--database`. */
  url: string;
  /** Another pool on the same schema, as another process or worker would have. */
  newPool(): pg.Pool;
  cleanup(): Promise<void>;
}

function urlWithSchema(schema: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return url.toString();
}

/** A fresh schema holding harness's tables, so that tests running at once never see each other's rows. */
export async function tempPgSchema(): Promise<TempPgSchema> {
  const schema = `harness_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${TEST_DATABASE_URL} (${String(error)}); start it or set HARNESS_TEST_DATABASE_URL`,
    );
  }
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const url = urlWithSchema(schema);
  const pools: pg.Pool[] = [];
  const newPool = () => {
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    pools.push(pool);
    return pool;
  };
  const pool = newPool();
  await ensurePgSchema(pool);
  return {
    pool,
    schema,
    url,
    newPool,
    cleanup: async () => {
      for (const each of pools.splice(0)) await each.end();
      const dropper = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await dropper.connect();
      try {
        await dropper.query(`DROP SCHEMA ${schema} CASCADE`);
      } finally {
        await dropper.end();
      }
    },
  };
}
