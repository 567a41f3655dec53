import { mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
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
 * A later run's base comes from find's listing compared with the stat cache the run before saved
 * (tree-list.ts): what changed in between, even an edit of the same size whose mtime was put
 * back, is in the base manifest the built CLI journals.
 */

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());
const SLOW = 180_000;

const file = (text: string) => ({
  hash: sha256Hex(Buffer.from(text)),
  size: Buffer.byteLength(text),
  exec: false,
});

describe("a later run's workspace base", () => {
  it(
    "records what changed since the cache was saved, a same-size edit with its mtime put back too",
    async () => {
      const env = await userEnv("listed");
      // Enough files that a later walk is taken from find's listing (tree-snapshot's LIST_MIN_ENTRIES).
      const many = Object.fromEntries(
        Array.from({ length: LIST_MIN_ENTRIES }, (_, i) => [`many/f${i}.txt`, `${i}\n`]),
      );
      const workspace = await workspaceWith({
        "same.txt": "12345678",
        "kept.txt": "kept\n",
        "sub/a.txt": "a\n",
        ...many,
      });
      const script = join(await tempDir("harness-listed-script-"), "model.mjs");
      await writeFile(script, 'export default async () => ({ text: "done" });');
      const run = (session: string) =>
        runCli(["run", "--script", script, "-w", workspace, "--session", session, "look"], env);
      expectExit(await run("first"), 0);
      // The cache the first run saved is what the second compares with.
      expect(readFileSync(join(workspace, ".harness", "tree-cache.json"), "utf8")).toContain('"kept.txt"');

      const before = statSync(join(workspace, "same.txt"));
      writeFileSync(join(workspace, "same.txt"), "ABCDEFGH");
      utimesSync(join(workspace, "same.txt"), before.atime, before.mtime);
      mkdirSync(join(workspace, "fresh"));
      writeFileSync(join(workspace, "fresh", "new.txt"), "new\n");
      expectExit(await run("second"), 0);

      const [base] = ofType(await readJournal(workspace, "second"), "workspace.base");
      const bytes = readFileSync(
        join(sessionDir(workspace, "second"), "artifacts", base?.data.manifest as string),
      );
      expect(Object.fromEntries(parseManifest(bytes))).toEqual({
        "same.txt": file("ABCDEFGH"),
        "kept.txt": file("kept\n"),
        "sub/a.txt": file("a\n"),
        "fresh/new.txt": file("new\n"),
        fresh: { dir: true },
        sub: { dir: true },
        many: { dir: true },
        ...Object.fromEntries(Object.entries(many).map(([path, text]) => [path, file(text)])),
      });
      expect(base?.data).toMatchObject({ files: 4 + LIST_MIN_ENTRIES });
    },
    SLOW,
  );
});
