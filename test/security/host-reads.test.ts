import { type ChildProcess, spawn } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import { MemoryJournalStore } from "../../src/journal/memory-store.js";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import { applyProposals } from "../../src/proposals/apply.js";
import { type ApplyOutcome, proposalsOf } from "../../src/proposals/ledger.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { currentEntry, putEntry } from "../../src/undo/disk.js";
import { materializeTree } from "../../src/undo/materialize.js";
import { scanTree } from "../../src/undo/scan.js";
import { DiskWorkspaceFs } from "../../src/workspace/disk-fs.js";
import type { Entry, Manifest } from "../../src/workspace/manifest.js";
import { TreeSnapshot } from "../../src/workspace/tree-snapshot.js";

/*
 * Every read harness does on the host under a workspace goes beneath it, never through a link.
 * For each host-side reader: a workspace with `d/f`, read once (the reader sees the real file),
 * then `d` is swapped for a symlink to a directory outside holding a file of the same name with
 * a secret, and the reader runs again: it must neither return, keep nor act on the outside file.
 */

const SECRET = "outside secret: the user's journal key";
const INSIDE = "inside content\n";
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** A workspace with `d/f`, and an outside directory holding `f` with the secret. */
function setup() {
  const root = temp("harness-host-reads-");
  const outside = temp("harness-host-outside-");
  mkdirSync(join(root, "d"));
  writeFileSync(join(root, "d/f"), INSIDE);
  writeFileSync(join(root, "keep.txt"), "keep\n");
  writeFileSync(join(outside, "f"), SECRET);
  const swap = () => {
    rmSync(join(root, "d"), { recursive: true });
    symlinkSync(outside, join(root, "d"));
  };
  return { root, outside, swap };
}

/** Every file under `dir` holding the secret. */
function holdingSecret(dir: string): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    let names: string[];
    try {
      names = readdirSync(at);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(at, name);
      try {
        if (readFileSync(path).includes(SECRET)) found.push(path);
      } catch {
        walk(path);
      }
    }
  };
  walk(dir);
  return found;
}

const file = (text: string): Entry => ({ hash: sha256Hex(text), size: Buffer.byteLength(text), exec: false });
const MODE = { directories: true };

interface Reader {
  name: string;
  /** Runs before the swap (sees the real file) and after it (must not follow the link). */
  run(root: string, outside: string, swap: () => void): Promise<void>;
}

const READERS: Reader[] = [
  {
    name: "the record's full walk",
    async run(root, _outside, swap) {
      const tree = new TreeSnapshot({ root, stateDir: join(root, ".harness"), watch: false });
      try {
        expect((await tree.snapshot({ full: true })).get("d/f")).toEqual(file(INSIDE));
        swap();
        const after = await tree.snapshot({ full: true });
        expect(after.get("d")).toEqual({ link: _outside });
        expect(after.has("d/f")).toBe(false);
        expect(holdingSecret(join(root, ".harness"))).toEqual([]);
      } finally {
        tree.close();
      }
    },
  },
  {
    name: "the record's walk of what notifications named",
    async run(root, outside, swap) {
      const tree = new TreeSnapshot({ root, stateDir: join(root, ".harness") });
      try {
        expect((await tree.snapshot({ full: true })).get("d/f")).toEqual(file(INSIDE));
        swap();
        const after = await tree.snapshot();
        expect(tree.last?.walk).toBe("partial");
        expect(after.get("d")).toEqual({ link: outside });
        expect([...after.keys()].filter((p) => p.startsWith("d/"))).toEqual([]);
        expect(holdingSecret(join(root, ".harness"))).toEqual([]);
      } finally {
        tree.close();
      }
    },
  },
  {
    name: "the record's kept copies (an object planted as a link)",
    async run(root, outside, swap) {
      const tree = new TreeSnapshot({ root, stateDir: join(root, ".harness"), watch: false });
      try {
        await tree.snapshot({ full: true });
        expect(Buffer.from(tree.object(sha256Hex(INSIDE)) ?? []).toString()).toBe(INSIDE);
        swap();
        // An object named by the secret's hash that is a link to the secret, then the objects directory itself.
        const objects = join(root, ".harness/objects");
        symlinkSync(join(outside, "f"), join(objects, sha256Hex(SECRET)));
        expect(tree.object(sha256Hex(SECRET))).toBeUndefined();
        renameSync(objects, join(root, ".harness/objects-real"));
        symlinkSync(join(root, ".harness/objects-real"), objects);
        expect(tree.object(sha256Hex(INSIDE))).toBeUndefined();
      } finally {
        tree.close();
      }
    },
  },
  {
    name: "audit's scan",
    async run(root, outside, swap) {
      expect((await scanTree(root, ["/.git/", "/.harness/"], MODE)).get("d/f")).toEqual(file(INSIDE));
      swap();
      const after = await scanTree(root, ["/.git/", "/.harness/"], MODE);
      expect(after.get("d")).toEqual({ link: outside });
      expect(after.has("d/f")).toBe(false);
    },
  },
  {
    name: "undo's read of the entry now",
    async run(root, _outside, swap) {
      expect((await currentEntry(root, "d/f", MODE)).entry).toEqual(file(INSIDE));
      swap();
      const now = await currentEntry(root, "d/f", MODE);
      expect(now.entry).toBeNull();
      expect(now.bytes).toBeUndefined();
    },
  },
  {
    name: "undo's writes (delete and restore)",
    async run(root, outside, swap) {
      await putEntry(root, "d/f", file("restored\n"), MODE, Buffer.from("restored\n"));
      expect(readFileSync(join(root, "d/f"), "utf8")).toBe("restored\n");
      swap();
      await putEntry(root, "d/f", null, MODE);
      await expect(putEntry(root, "d/f", file("x"), MODE, Buffer.from("x"))).rejects.toThrow();
      expect(readFileSync(join(outside, "f"), "utf8")).toBe(SECRET);
      expect(readdirSync(outside)).toEqual(["f"]);
    },
  },
  {
    name: "fork --into's read of unchanged files from the workspace",
    async run(root, _outside, swap) {
      const artifacts = new MemoryArtifactStore();
      const tree: Manifest = new Map<string, Entry>([
        ["d", { dir: true }],
        ["d/f", file(INSIDE)],
      ]);
      const first = temp("harness-fork-into-");
      await materializeTree(tree, { artifacts, workspaceRoot: root }, first, MODE);
      expect(readFileSync(join(first, "d/f"), "utf8")).toBe(INSIDE);
      swap();
      // The tree names the secret's content at d/f: it is not fetched through the link.
      const wanting: Manifest = new Map<string, Entry>([
        ["d", { dir: true }],
        ["d/f", file(SECRET)],
      ]);
      const second = temp("harness-fork-into-");
      await expect(
        materializeTree(wanting, { artifacts, workspaceRoot: root }, second, MODE),
      ).rejects.toThrow(/neither in the session's artifacts nor in the workspace/);
      expect(holdingSecret(second)).toEqual([]);
    },
  },
  {
    name: "harness apply (a link inside the workspace, too)",
    async run(root, _outside, swap) {
      mkdirSync(join(root, "e"));
      writeFileSync(join(root, "e/f"), INSIDE);
      const fs = await DiskWorkspaceFs.create(root);
      const first = await applied(fs, "d/f", "first\n", sha256Hex(INSIDE));
      expect(first.map((o) => o.outcome)).toEqual(["applied"]);
      expect(readFileSync(join(root, "d/f"), "utf8")).toBe("first\n");
      swap();
      // Outside: refused, nothing read or written there.
      const outsideTry = await applied(fs, "d/f", "second\n", sha256Hex(SECRET));
      expect(outsideTry.map((o) => o.outcome)).toEqual(["conflict"]);
      expect(outsideTry[0]?.current_version).toBeNull();
      expect(readFileSync(join(_outside, "f"), "utf8")).toBe(SECRET);
      // Inside: d now leads to e, whose f has the base version; still not applied through the link.
      rmSync(join(root, "d"));
      symlinkSync("e", join(root, "d"));
      const insideTry = await applied(fs, "d/f", "third\n", sha256Hex(INSIDE));
      expect(insideTry.map((o) => o.outcome)).toEqual(["conflict"]);
      expect(insideTry[0]?.message).toMatch(/symbolic link/);
      expect(readFileSync(join(root, "e/f"), "utf8")).toBe(INSIDE);
    },
  },
];

/** One proposal for `path`, recorded and applied as `harness apply` does. */
async function applied(
  fs: DiskWorkspaceFs,
  path: string,
  content: string,
  base: string,
): Promise<ApplyOutcome[]> {
  const backend = new MemoryJournalStore();
  const record = {
    proposal_id: `p-${Math.random().toString(16).slice(2)}`,
    call_id: "c1",
    path,
    base_version: base,
    content,
    content_sha256: sha256Hex(content),
    diff: "",
  };
  const events: AnyNewEvent[] = [{ type: "proposal.recorded", data: record }];
  const writer = await backend.openWriter("s", { create: true });
  await writer.append(events);
  try {
    return await applyProposals({
      fs,
      proposals: proposalsOf(await writer.readAll()),
      record: async () => undefined,
    });
  } finally {
    await writer.close();
  }
}

describe("every host-side reader under a workspace, with a link swapped in between two calls", () => {
  it.each(READERS.map((reader) => [reader.name, reader] as const))(
    "%s: not followed",
    async (_name, reader) => {
      const { root, outside, swap } = setup();
      await reader.run(root, outside, swap);
      expect(readFileSync(join(outside, "f"), "utf8")).toBe(SECRET);
    },
  );
});

/*
 * The same readers while a process inside the workspace keeps swapping `d` between the real
 * directory and a link to the outside one: whatever the interleaving, no reader may return or
 * keep the outside file (with a check by path before reading, these fail within a few attempts).
 */
describe.runIf(process.platform === "linux")(
  "every host-side reader, while a directory is swapped for a link",
  () => {
    let swapper: ChildProcess | undefined;
    afterEach(() => {
      swapper?.kill("SIGKILL");
      swapper = undefined;
    });

    async function swapping(root: string, outside: string): Promise<void> {
      symlinkSync(outside, join(root, "d.link"));
      const script = `
      const { renameSync } = require("node:fs");
      const [d, real, link] = process.argv.slice(1);
      const move = (from, to) => { try { renameSync(from, to); } catch {} };
      process.stdout.write("ready\\n");
      for (;;) { move(d, real); move(link, d); move(d, link); move(real, d); }
    `;
      const child = spawn(
        process.execPath,
        ["-e", script, join(root, "d"), join(root, "d.real"), join(root, "d.link")],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      swapper = child;
      await new Promise<void>((resolve) => child.stdout?.once("data", () => resolve()));
    }

    const secretHash = sha256Hex(SECRET);
    const holds = (tree: Manifest) => [...tree.values()].some((e) => "hash" in e && e.hash === secretHash);
    const RACES: [string, (root: string) => Promise<boolean>][] = [
      [
        "the record's walk",
        async (root) => {
          const tree = new TreeSnapshot({ root, stateDir: join(root, ".harness"), watch: false });
          try {
            return (
              holds(await tree.snapshot({ full: true })) || holdingSecret(join(root, ".harness")).length > 0
            );
          } finally {
            tree.close();
          }
        },
      ],
      ["audit's scan", async (root) => holds(await scanTree(root, ["/.git/", "/.harness/"], MODE))],
      [
        "undo's read of the entry now",
        async (root) => {
          const now = await currentEntry(root, "d/f", MODE).catch(() => ({ entry: null, bytes: undefined }));
          return (
            (now.entry !== null && "hash" in now.entry && now.entry.hash === secretHash) ||
            now.bytes?.includes(SECRET) === true
          );
        },
      ],
    ];

    it.each(RACES)(
      "%s never reads the outside file",
      async (_name, read) => {
        const { root, outside } = setup();
        await swapping(root, outside);
        let leaked = 0;
        for (let i = 0; i < 300; i++) if (await read(root).catch(() => false)) leaked++;
        expect(leaked).toBe(0);
      },
      60_000,
    );
  },
);
