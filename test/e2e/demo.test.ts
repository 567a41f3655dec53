import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  harness,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness demo", () => {
  it("fixes hello.txt (verified); a second run re-checks without new model requests or tool calls", async () => {
    const workspace = join(await tempDir(), "fresh");
    const first = await harness(["demo", "--workspace", workspace, "--json"]);
    expectExit(first, 0);
    expect(jsonSummary(first).status).toBe("verified");
    expect(await readFile(join(workspace, "hello.txt"))).toEqual(Buffer.from("hello, harness\n"));

    const before = await readJournal(workspace, "demo");
    const second = await harness(["demo", "--workspace", workspace, "--json"]);
    expectExit(second, 0);
    expect(jsonSummary(second).status).toBe("verified");
    const after = await readJournal(workspace, "demo");
    expect(after.slice(0, before.length)).toEqual(before);
    const added = after.slice(before.length);
    expect(ofType(added, "model.started")).toHaveLength(0);
    expect(ofType(added, "tool.started")).toHaveLength(0);
    expect(ofType(added, "acceptance.checked")).toHaveLength(1);
    expect(ofType(added, "acceptance.checked")[0]!.data.accepted).toBe(true);
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("hello, harness\n");
  });

  it("--read-only: the edit is denied, the run stops (exit 2) and the file is unchanged", async () => {
    const workspace = join(await tempDir(), "ro");
    const result = await harness(["demo", "--workspace", workspace, "--read-only", "--json"]);
    expect(result.code).toBe(2);
    expect(jsonSummary(result).status).toBe("stopped");
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("helo, harness\n");
    const records = await readJournal(workspace, "demo-read-only");
    const denied = ofType(records, "tool.result").filter((r) => r.data.status === "denied");
    expect(denied).toHaveLength(1);
    expect(denied[0]!.data.name).toBe("edit_file");
  });

  it("never overwrites an existing hello.txt", async () => {
    const workspace = await tempDir();
    await writeFile(join(workspace, "hello.txt"), "my own notes\n");
    const result = await harness(["demo", "--workspace", workspace, "--json"]);
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("my own notes\n");
    // The model's edit cannot match, so the host's check fails and the run is not verified.
    expect(result.code).toBe(2);
    expect(jsonSummary(result).status).toBe("stopped");
  });

  it("without --workspace runs in a fresh temporary directory and says where on stderr", async () => {
    const result = await harness(["demo", "--json"]);
    const match = /using a fresh workspace at (\S+)/.exec(result.stderr);
    expect(match).not.toBeNull();
    const dir = match![1]!;
    try {
      expect(result.code).toBe(0);
      const summary = jsonSummary(result);
      expect(summary.status).toBe("verified");
      expect(summary.workspace).toBe(dir);
      expect(await readFile(join(dir, "hello.txt"), "utf8")).toBe("hello, harness\n");
      expect(existsSync(join(dir, ".harness", "sessions", "demo", "events.jsonl"))).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
