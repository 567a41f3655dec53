import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  workspaceWith,
} from "./helpers.js";

/*
 * A file the built-in rules keep from read_file unless a person says yes (`.env`, keys) must not be
 * read unasked by a shell line that names it, even where the shell is allowed: `cat .env` reads
 * exactly what `read_file .env` may not. Run through the built CLI with no terminal, so the ask is
 * denied: the secret must be in no file the command wrote, and nowhere in the journal.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SECRET = "API_KEY=sk-canary-4f1d9a";

describe("a shell line reading a secret file where the shell is allowed", () => {
  it("asks (denied without a terminal): nothing is copied and the journal holds no trace of it", async () => {
    const workspace = await workspaceWith({ ".env": `${SECRET}\n`, "README.md": "readme\n" });
    const script = await jsonScript([
      {
        calls: [
          { id: "s1", name: "shell", arguments: { command: "cat .env > leaked.txt" } },
          { id: "s2", name: "shell", arguments: { command: "cp README.md copy.md" } },
        ],
      },
      { text: "done" },
    ]);
    const child = startHarness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--shell",
      "allow",
      "--sandbox",
      "off",
      "--json",
      "copy things",
    ]);
    const summary = jsonSummary(await finished(child));
    expect(existsSync(join(workspace, "leaked.txt"))).toBe(false);
    // The line that names no secret ran, so the shell really was allowed.
    expect(await readFile(join(workspace, "copy.md"), "utf8")).toBe("readme\n");
    const journal = await readJournal(workspace, String(summary.session));
    const results = ofType(journal, "tool.result");
    const denied = results.find((r) => r.data.call_id === "s1");
    expect(denied?.data.status).toBe("denied");
    expect(JSON.stringify(denied?.data)).toContain("**/.env");
    expect(results.find((r) => r.data.call_id === "s2")?.data.status).toBe("ok");
    // It was an ask (recorded as asked), answered no because nobody is at a terminal.
    expect(ofType(journal, "approval.requested").map((r) => r.data.call_id)).toEqual(["s1"]);
    expect(ofType(journal, "approval.decided").find((r) => r.data.call_id === "s1")?.data.decision).toBe(
      "deny",
    );
    expect(JSON.stringify(journal)).not.toContain("sk-canary");
  }, 60_000);
});
