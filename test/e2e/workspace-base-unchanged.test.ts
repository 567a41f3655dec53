import { execFileSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { parseManifest } from "../../src/workspace/manifest.js";
import { LIST_MIN_ENTRIES } from "../../src/workspace/tree-snapshot.js";
import { runCli } from "../e2e-providers/cli.js";
import { userEnv } from "../support/user-env.js";
import {
  ensureBuilt,
  expectExit,
  ofType,
  readJournal,
  removeTempDirs,
  sessionDir,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * Through the built CLI: a run on a tree find lists exactly as it did for the last run's base
 * journals that base's manifest again without reading the stat cache (a cache made unreadable in
 * between is left as it is), and a run after a same-size edit whose mtime was put back walks the
 * tree and records the edit.
 */

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());
const SLOW = 180_000;

describe("a run's workspace base on an unchanged tree", () => {
  it(
    "is the last base's manifest, taken without the stat cache; an edit is still recorded",
    async () => {
      const env = await userEnv("unchanged");
      const many = Object.fromEntries(
        Array.from({ length: LIST_MIN_ENTRIES }, (_, i) => [`many/f${i}.txt`, `${i}\n`]),
      );
      const workspace = await workspaceWith({ "same.txt": "12345678", ...many });
      const script = join(await tempDir("harness-unchanged-script-"), "model.mjs");
      await writeFile(script, 'export default async () => ({ text: "done" });');
      const run = (session: string, flags = ["-w", workspace], extra: NodeJS.ProcessEnv = {}) =>
        runCli(["run", "--script", script, ...flags, "--session", session, "look"], { ...env, ...extra });
      const base = async (session: string) => {
        const [record] = ofType(await readJournal(workspace, session), "workspace.base");
        const id = record?.data.manifest as string;
        const bytes = readFileSync(join(sessionDir(workspace, session), "artifacts", id));
        expect(sha256Hex(bytes)).toBe(id);
        return { data: record?.data, manifest: parseManifest(bytes) };
      };
      // The first run saves the stat cache; the second lists the tree and remembers its base.
      expectExit(await run("first"), 0);
      expectExit(await run("second"), 0);
      const second = await base("second");

      // A cache that does not parse (of the same size: find is still used) would be rewritten by
      // any walk; the unchanged tree's base never reads it.
      const cache = join(workspace, ".harness", "tree-cache.json");
      const garbage = " ".repeat(statSync(cache).size);
      writeFileSync(cache, garbage);
      // Its listing is started before the command has loaded, from --workspace as given.
      const traced = await run("third", [`--workspace=${workspace}`], { HARNESS_TRACE_STARTUP: "1" });
      expectExit(traced, 0);
      expect(traced.stderr).toMatch(/listing: prefetch started[\s\S]*record 3 workspace\.base/);
      const third = await base("third");
      // A run that records no new base (its help, a continued session) starts no listing.
      for (const flags of [["--help"], ["--continue"]]) {
        const none = await run("unused", ["-w", workspace, ...flags], { HARNESS_TRACE_STARTUP: "1" });
        expect(none.stderr).toContain("main: entered");
        expect(none.stderr).not.toContain("listing: prefetch started");
      }
      expect(third.data).toEqual(second.data);
      expect(readFileSync(cache, "utf8")).toBe(garbage);

      const path = join(workspace, "same.txt");
      const stamp = join(await tempDir("harness-unchanged-stamp-"), "stamp");
      execFileSync("touch", ["-r", path, stamp]);
      writeFileSync(path, "ABCDEFGH");
      execFileSync("touch", ["-m", "-r", stamp, path]);
      expectExit(await run("fourth"), 0);
      const fourth = await base("fourth");
      expect(fourth.data?.manifest).not.toBe(second.data?.manifest);
      expect(fourth.manifest.get("same.txt")).toEqual({ hash: sha256Hex("ABCDEFGH"), size: 8, exec: false });
      expect(fourth.data).toMatchObject({ files: 1 + LIST_MIN_ENTRIES, bytes: second.data?.bytes });
      expect(readFileSync(cache, "utf8")).not.toBe(garbage);
    },
    SLOW,
  );
});
