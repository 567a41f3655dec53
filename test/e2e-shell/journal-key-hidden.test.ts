// The journal key authenticates every journal this user trusts; a sandboxed command that could
// read it could forge one. Here the key lies in a directory the user config's read_paths shows
// the sandbox (as it would under /opt or /etc): the command must see the directory, not the key.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("the journal key is hidden from sandboxed commands wherever it lies", () => {
  it("a key inside a read path: cat of it yields nothing, the rest of the read path stays visible", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const home = await tempDir("harness-home-");
    const shown = await tempDir("harness-readpath-");
    writeFileSync(join(shown, "sdk.txt"), "visible\n");
    const keyFile = join(shown, "journal.key");
    const config = join(home, "config.json");
    writeFileSync(config, JSON.stringify({ sandbox: { profile: "workspace-write", read_paths: [shown] } }));
    const script = await jsonScript([
      {
        text: "steal",
        calls: [
          {
            id: "steal",
            name: "shell",
            arguments: { command: `cat ${shown}/sdk.txt; cat ${keyFile}; cp ${keyFile} stolen.key` },
          },
        ],
      },
      { text: "done" },
    ]);
    const result = await finished(
      startHarnessWith(
        ["run", "--script", script, "-w", workspace, "--session", "k", "--shell", "allow", "go"],
        {
          HARNESS_CONFIG: config,
          HOME: home,
          HARNESS_KEY_FILE: keyFile,
        },
      ),
    );
    expectExit(result, 0);
    const key = readFileSync(keyFile, "utf8").trim();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    const [steal] = ofType(await readJournal(workspace, "k"), "tool.result");
    const content = String(steal?.data.content);
    expect(content).toContain("visible");
    expect(content).not.toContain(key);
    let stolen = "";
    try {
      stolen = readFileSync(join(workspace, "stolen.key"), "utf8");
    } catch {
      // not copied at all: fine
    }
    expect(stolen).not.toContain(key);
  });
});
