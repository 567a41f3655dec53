import { readdirSync, readFileSync, statSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * The workspace record is taken on the host, outside the sandbox, after every shell call. A
 * sandboxed command cannot read a file outside the workspace, but it can make a directory the
 * record knows, then replace it with a symlink to a directory outside (the user's config
 * directory, `/proc/self`). A record that re-reads the paths it knew through that link reads the
 * outside file with harness's rights and keeps its bytes under `.harness/objects`, which the next
 * shell call can print. Each case asserts the outside bytes are stored nowhere, the journal
 * records the directory as having become a link, and the next call's output does not hold them.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SECRET = "outside-secret-7f3a9c journal key bytes";
/** Not credential-looking, so output scrubbing would not hide it: only not reading it keeps it out. */
const ENV_MARKER = "harness-env-marker-5d1e0b";

/** Every file under `dir` (recursively) whose bytes contain `needle`, relative to `dir`. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (at: string, prefix: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const rel = prefix + name;
      const info = statSync(path, { throwIfNoEntry: false });
      if (info?.isDirectory()) walk(path, `${rel}/`);
      else if (info?.isFile() && readFileSync(path).includes(needle)) found.push(rel);
    }
  };
  walk(dir, "");
  return found;
}

async function attack(linkTarget: string, fileName: string, env: NodeJS.ProcessEnv) {
  const workspace = await workspaceWith({ "notes.txt": "notes\n" });
  const script = await jsonScript([
    // The record sees d/<file> as a directory and a file it watches.
    {
      calls: [
        { id: "s1", name: "shell", arguments: { command: `mkdir d && echo placeholder > d/${fileName}` } },
      ],
    },
    // d becomes a link to a directory outside that holds a file of the same name.
    { calls: [{ id: "s2", name: "shell", arguments: { command: `rm -rf d && ln -s '${linkTarget}' d` } }] },
    // What the record kept is readable by the next command: print all of it.
    {
      calls: [
        {
          id: "s3",
          name: "shell",
          arguments: {
            command:
              "cat .harness/objects/* 2>/dev/null; cat .harness/sessions/*/artifacts/* 2>/dev/null; echo end",
          },
        },
      ],
    },
    { text: "done" },
  ]);
  const child = startHarness(
    [
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--shell",
      "allow",
      "--sandbox",
      "workspace-write",
      "--json",
      "go",
    ],
    { env },
  );
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  let result: Awaited<ReturnType<typeof finished>>;
  try {
    result = await finished(child);
  } finally {
    clearTimeout(timer);
  }
  expectExit(result, 0);
  const session = String(jsonSummary(result).session);
  const records = await readJournal(workspace, session);
  return { workspace, records, result };
}

describe("a directory the record knows, swapped for a link to a directory outside", () => {
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    const config = join(await tempDir("harness-config-"), "config.json");
    await writeFile(config, "{}\n");
    env = { ...childEnv(), HARNESS_CONFIG: config, HARNESS_E2E_MARKER: ENV_MARKER };
  });

  it.each([
    { case: "a directory of the user's (its journal key)", fileName: "journal.key" },
    { case: "/proc/self (harness's own environment)", fileName: "environ" },
  ])("$case: not read, kept or shown; recorded as a link", async ({ fileName, case: which }) => {
    let target = "/proc/self";
    let needle = ENV_MARKER;
    if (!which.startsWith("/proc")) {
      target = await tempDir("harness-user-config-");
      await writeFile(join(target, fileName), SECRET);
      needle = SECRET;
    }
    const { workspace, records, result } = await attack(target, fileName, env);

    // Nothing under .harness (objects, artifacts, journal, cache) holds the outside bytes.
    expect(filesHolding(join(workspace, ".harness"), needle)).toEqual([]);
    expect(result.stdout).not.toContain(needle);

    // The journal: s1 made d and d/FILE; s2 turned d into a link and deleted what was below it.
    const changes = ofType(records, "workspace.changed").map((r) => r.data);
    const s2 = changes.find((c) => c.call_id === "s2") as {
      created: { path: string }[];
      modified: { path: string; before: unknown; after: unknown }[];
      deleted: { path: string }[];
    };
    expect(s2).toBeDefined();
    expect(s2.modified).toEqual([{ path: "d", before: { dir: true }, after: { link: target } }]);
    expect(s2.deleted.map((d) => d.path)).toEqual([`d/${fileName}`]);
    expect(s2.created).toEqual([]);
    // No record anywhere names an entry below the link.
    expect(JSON.stringify(records)).not.toContain(needle);

    // The next command printed everything the record kept: not the outside bytes.
    const s3 = resultsByCall(records).get("s3");
    expect(s3).toMatchObject({ status: "ok" });
    expect(JSON.stringify(s3)).toContain("end");
    expect(JSON.stringify(s3)).not.toContain(needle);
  });
});
