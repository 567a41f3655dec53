import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cliEnv, runCli } from "../e2e-providers/cli.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";
import {
  type CliResult,
  ensureBuilt,
  expectExit,
  fixture,
  journalFile,
  jsonSummary,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * `sessions`, `inspect` and `journal verify` read sessions stored in PostgreSQL with
 * `--database URL` and print what they print for the same journal in a workspace. The journal a
 * real run wrote is copied row by row into the database, so both stores hold the same records.
 */

const FINAL = "status: final\n";
const ACCEPT_FINAL = `printf '${FINAL.replace("\n", "\\n")}' | cmp -s - notes.txt`;
const JOURNAL_REFUSED = 5;
const USAGE = 64;

let env: NodeJS.ProcessEnv;
let workspace: string;
let session: string;
let db: TempPgSchema;

beforeAll(async () => {
  ensureBuilt();
  env = cliEnv(await tempDir("harness-db-home-"), {
    HARNESS_KEY_FILE: join(await tempDir("harness-db-key-"), "journal.key"),
  });
  workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
  const ran = await runCli(
    ["run", "--script", fixture("read-edit.mjs"), "--workspace", workspace, "--write", "allow"].concat([
      "--accept",
      ACCEPT_FINAL,
      "--json",
      "finalise the notes",
    ]),
    env,
  );
  expectExit(ran, 0);
  session = String(jsonSummary(ran).session);
});
afterAll(removeTempDirs);

beforeEach(async () => {
  db = await tempPgSchema();
  const lines = (await readFile(journalFile(workspace, session), "utf8")).split("\n").slice(0, -1);
  await db.pool.query("INSERT INTO harness_sessions (session_id, next_seq) VALUES ($1, $2)", [
    session,
    lines.length,
  ]);
  for (const [seq, line] of lines.entries()) {
    const { hash } = JSON.parse(line) as { hash: string };
    await db.pool.query("INSERT INTO harness_records (session_id, seq, hash, line) VALUES ($1, $2, $3, $4)", [
      session,
      seq,
      hash,
      line,
    ]);
  }
});
afterEach(() => db.cleanup());

const cli = (args: readonly string[]): Promise<CliResult> => runCli(args, env);
const json = (result: CliResult): unknown => JSON.parse(result.stdout);

describe("--database URL", () => {
  it("lists, inspects and verifies a session in PostgreSQL exactly as the same journal in a workspace", async () => {
    const fromDisk = await cli(["sessions", "--workspace", workspace, "--json"]);
    const fromDb = await cli(["sessions", "--database", db.url, "--json"]);
    expectExit(fromDb, 0);
    expect(json(fromDb)).toEqual(json(fromDisk));
    expect(json(fromDb)).toMatchObject([{ session, status: "verified", model_requests: 3, tool_calls: 2 }]);

    const inspectDisk = await cli(["inspect", session, "--workspace", workspace, "--json"]);
    const inspectDb = await cli(["inspect", session, "--database", db.url, "--json"]);
    expectExit(inspectDb, 0);
    expect(json(inspectDb)).toEqual(json(inspectDisk));
    // A unique start of the id names the session in the database as in a workspace.
    const byPrefix = await cli(["inspect", session.slice(0, 10), "--database", db.url, "--json"]);
    expectExit(byPrefix, 0);
    expect(json(byPrefix)).toEqual(json(inspectDisk));

    // The artifacts stay on disk: --workspace names where to check them.
    const verifyDisk = await cli(["journal", "verify", session, "--workspace", workspace, "--json"]);
    const verifyDb = await cli([
      "journal",
      "verify",
      session,
      "--database",
      db.url,
      "--workspace",
      workspace,
      "--json",
    ]);
    expectExit(verifyDb, 0);
    expect(json(verifyDb)).toEqual(json(verifyDisk));
    expect(json(verifyDb)).toMatchObject({ ok: true, trusted: true });

    const text = await cli(["journal", "verify", session, "--database", db.url]);
    expectExit(text, 0);
    expect(text.stdout).toContain(`journal ${session}: intact (`);
    expect(text.stdout).toContain(
      "artifacts not checked: name the workspace that holds them with --workspace DIR",
    );
    expect(json(await cli(["journal", "verify", session, "--database", db.url, "--json"]))).toMatchObject({
      ok: true,
      artifacts_checked: false,
    });
  });

  it("refuses a row changed in the database: verify exits 5 naming the record, inspect refuses too", async () => {
    await db.pool.query(
      "UPDATE harness_records SET line = replace(line, 'finalise the notes', 'delete the notes') WHERE session_id = $1 AND seq = 0",
      [session],
    );
    const verified = await cli(["journal", "verify", session, "--database", db.url, "--json"]);
    expectExit(verified, JOURNAL_REFUSED);
    expect(json(verified)).toMatchObject({
      session,
      ok: false,
      code: "TAMPERED",
      validRecords: 0,
      validBytes: 0,
    });
    const text = await cli(["journal", "verify", session, "--database", db.url]);
    expect(text.stdout).toContain(`journal ${session}: TAMPERED: record seq 0 was modified`);
    const inspected = await cli(["inspect", session, "--database", db.url]);
    expectExit(inspected, JOURNAL_REFUSED);
    expect(inspected.stderr).toContain("journal refused (TAMPERED)");
  });

  it("gives clear usage errors: an unknown session, a URL that is not postgres://, both places at once", async () => {
    const unknown = await cli(["inspect", "no-such-session", "--database", db.url]);
    expectExit(unknown, USAGE);
    expect(unknown.stderr).toContain('no session "no-such-session" in database postgres://postgres:***@');
    expect(unknown.stderr).toContain("harness sessions --database URL");
    const notPg = await cli(["sessions", "--database", "mysql://x@localhost/db"]);
    expectExit(notPg, USAGE);
    expect(notPg.stderr).toContain("--database must be a postgres:// URL");
    const both = await cli(["sessions", "--database", db.url, "--workspace", workspace]);
    expectExit(both, USAGE);
    expect(both.stderr).toContain("--workspace and --database name two places");
    const repair = await cli(["journal", "repair", session, "--database", db.url]);
    expectExit(repair, USAGE);
    expect(repair.stderr).toContain("--database applies to harness journal verify only");
  });

  it("reports an unreachable database without a stack trace or the password", async () => {
    const result = await cli(["sessions", "--database", "postgres://someone:s3cret@127.0.0.1:1/db"]);
    expectExit(result, 1);
    expect(result.stderr).toContain("cannot connect to postgres://someone:***@127.0.0.1:1/db in PostgreSQL");
    expect(result.stderr).not.toContain("s3cret");
    expect(result.stderr).not.toContain("    at ");
  });
});

/** What `harness report` embedded in its page: the verdict it showed and the records it rendered. */
interface ReportData {
  meta: { session: string; verdict: { ok: boolean; records: number; problems: string[]; detail?: string } };
  records: { seq: number; hash: string }[];
}

async function reportData(file: string): Promise<ReportData> {
  const html = await readFile(file, "utf8");
  const block = /<script type="application\/json" id="harness-data">(.*?)<\/script>/s.exec(html)?.[1];
  if (block === undefined) throw new Error(`${file} has no data block`);
  return JSON.parse(block) as ReportData;
}

describe("harness report --database URL", () => {
  it("writes the page for a session in PostgreSQL from the same verified records as the workspace's journal", async () => {
    const dir = await tempDir("harness-db-report-");
    const fromDisk = await cli(["report", session, "--workspace", workspace, "-o", join(dir, "disk.html")]);
    expectExit(fromDisk, 0);
    // --workspace names where the artifacts are, so the verdict is the workspace's, word for word.
    const withArtifacts = await cli([
      "report",
      session,
      "--database",
      db.url,
      "--workspace",
      workspace,
      "-o",
      join(dir, "db.html"),
    ]);
    expectExit(withArtifacts, 0);
    const disk = await reportData(join(dir, "disk.html"));
    const fromDb = await reportData(join(dir, "db.html"));
    expect(fromDb.records).toEqual(disk.records);
    expect(fromDb.meta.verdict).toEqual(disk.meta.verdict);
    expect(fromDb.meta.verdict).toMatchObject({ ok: true, problems: [] });
    expect(fromDb.meta.verdict.detail).toMatch(/^authenticated by your key; [1-9]\d* artifact\(s\) match/);
    expect(fromDb.meta.session).toBe(session);
    expect(withArtifacts.stdout).toBe(
      `report ${join(dir, "db.html")}: session ${session}, ${disk.records.length} records, journal verified\n`,
    );

    const databaseOnly = await cli(["report", session, "--database", db.url, "-o", join(dir, "only.html")]);
    expectExit(databaseOnly, 0);
    const only = await reportData(join(dir, "only.html"));
    expect(only.records).toEqual(disk.records);
    expect(only.meta.verdict).toMatchObject({ ok: true, records: disk.records.length, problems: [] });
    expect(only.meta.verdict.detail).toBe(
      "authenticated by your key; artifacts not checked (they stay on the disk of the workspace the session ran in)",
    );
  });

  it("still writes a page for a row changed in the database: the records before it and the verdict, exit 5", async () => {
    await db.pool.query(
      `UPDATE harness_records SET line = regexp_replace(line, '"time":"[^"]*"', '"time":"2000-01-01T00:00:00.000Z"')
       WHERE session_id = $1 AND seq = 3`,
      [session],
    );
    const changed = await db.pool.query<{ line: string }>(
      "SELECT line FROM harness_records WHERE session_id = $1 AND seq = 3",
      [session],
    );
    const journal = (await readFile(journalFile(workspace, session), "utf8")).split("\n");
    expect(changed.rows[0]?.line).not.toBe(journal[3]);
    const out = join(await tempDir("harness-db-report-"), "tampered.html");
    const result = await cli(["report", session, "--database", db.url, "-o", out]);
    expectExit(result, JOURNAL_REFUSED);
    expect(result.stdout).toContain("journal did NOT verify");
    expect(result.stderr).toContain(`harness report: session ${session}: `);
    const data = await reportData(out);
    expect(data.records.map((r) => r.hash)).toEqual(
      journal.slice(0, 3).map((line) => (JSON.parse(line) as { hash: string }).hash),
    );
    expect(data.meta.verdict.ok).toBe(false);
    expect(data.meta.verdict.problems).toContain("only the first 3 records are shown");
    expect(data.meta.verdict.problems[0]).toMatch(/^(TAMPERED|CORRUPT): /);
    expect(result.stderr).toContain(data.meta.verdict.problems[0]);
  });

  it("shows a session recorded under another journal key as untrusted: the page says so, exit 5", async () => {
    const stranger = cliEnv(await tempDir("harness-db-home-"), {
      HARNESS_KEY_FILE: join(await tempDir("harness-db-key-"), "journal.key"),
    });
    const out = join(await tempDir("harness-db-report-"), "untrusted.html");
    const result = await runCli(["report", session, "--database", db.url, "-o", out], stranger);
    expectExit(result, JOURNAL_REFUSED);
    expect(result.stdout).toContain("journal did NOT verify");
    const data = await reportData(out);
    const journal = (await readFile(journalFile(workspace, session), "utf8")).split("\n").slice(0, -1);
    expect(data.records).toHaveLength(journal.length);
    expect(data.meta.verdict.ok).toBe(false);
    expect(data.meta.verdict.problems).toEqual([expect.stringMatching(/^UNTRUSTED: /)]);
    expect(result.stderr).toContain(`harness report: session ${session}: UNTRUSTED: `);
  });

  it("writes no file for an unknown session, a bad URL, an unreachable database or --last, and says what to do", async () => {
    const dir = await tempDir("harness-db-report-");
    const out = join(dir, "report.html");
    const unknown = await cli(["report", "no-such-session", "--database", db.url, "-o", out]);
    expectExit(unknown, USAGE);
    expect(unknown.stderr).toContain('no session "no-such-session" in database postgres://postgres:***@');
    expect(unknown.stderr).toContain("harness sessions --database URL");
    const notPg = await cli(["report", session, "--database", "mysql://x@localhost/db", "-o", out]);
    expectExit(notPg, USAGE);
    expect(notPg.stderr).toContain("--database must be a postgres:// URL");
    const notUrl = await cli(["report", session, "--database", "127.0.0.1:5432", "-o", out]);
    expectExit(notUrl, USAGE);
    expect(notUrl.stderr).toContain("--database must be a URL like postgres://USER:PASSWORD@HOST:5432/DB");
    const unreachable = await cli([
      "report",
      session,
      "--database",
      "postgres://someone:s3cret@127.0.0.1:1/db",
      "-o",
      out,
    ]);
    expectExit(unreachable, 1);
    expect(unreachable.stderr).toContain(
      "cannot connect to postgres://someone:***@127.0.0.1:1/db in PostgreSQL",
    );
    expect(unreachable.stderr).not.toContain("s3cret");
    expect(unreachable.stderr).not.toContain("    at ");
    const last = await cli(["report", "--last", "--database", db.url, "-o", out]);
    expectExit(last, USAGE);
    expect(last.stderr).toContain("with --database name the session");
    // Nothing written, not even a temporary file beside the target.
    expect(await readdir(dir)).toEqual([]);
    const help = await cli(["report", "--help"]);
    expectExit(help, 0);
    expect(help.stdout).toContain("harness report SESSION --database URL [--workspace DIR] -o FILE");
  });
});
