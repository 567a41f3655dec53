import { startEmbeddedPostgres } from "./embedded-postgres.js";

/**
 * The PostgreSQL the tests use: the one HARNESS_TEST_DATABASE_URL names when it is set, else an
 * embedded server started here once for the whole run (on a free port, data in a temporary
 * directory) and stopped and removed at its end. The URL reaches the test workers, and the CLI
 * processes they start, through the environment, which they inherit.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.HARNESS_TEST_DATABASE_URL) return undefined;
  const server = await startEmbeddedPostgres();
  process.env.HARNESS_TEST_DATABASE_URL = server.url;
  // Tells test/dev-setup that the URL is this run's embedded server, not one given to it.
  process.env.HARNESS_TEST_DATABASE_EMBEDDED = "1";
  return async () => {
    await server.stop();
    delete process.env.HARNESS_TEST_DATABASE_URL;
    delete process.env.HARNESS_TEST_DATABASE_EMBEDDED;
  };
}
