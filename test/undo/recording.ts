import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileArtifactStore } from "../../src/artifacts/file-store.js";
import { FileJournalStore } from "../../src/journal/file-store.js";
import type { JournalWriter } from "../../src/journal/store.js";
import type { EventData } from "../../src/journal/vocabulary.js";
import { scanTree } from "../../src/undo/scan.js";
import { diffManifests, type Manifest, manifestBytes } from "../../src/workspace/manifest.js";

/**
 * A session's workspace record written the way harness records one (a base manifest in the
 * artifacts, then one workspace.changed per call with every replaced content stored first),
 * around changes the test makes to a real directory.
 */
export class Recording {
  readonly root: string;
  readonly store: FileJournalStore;
  readonly artifacts: FileArtifactStore;
  #writer: JournalWriter | undefined;
  #tree: Manifest = new Map();

  /** `directories`: record directories, as harness does now (false: a session recorded before it did). */
  constructor(
    readonly sessionId = "s1",
    readonly directories = false,
  ) {
    this.root = mkdtempSync(join(tmpdir(), "harness-undo-test-"));
    this.store = new FileJournalStore(join(this.root, ".harness"));
    this.artifacts = new FileArtifactStore(join(this.root, ".harness", "sessions", sessionId, "artifacts"));
  }

  async writer(): Promise<JournalWriter> {
    this.#writer ??= await this.store.openWriter(this.sessionId, { create: true });
    return this.#writer;
  }

  async close(): Promise<void> {
    await this.#writer?.close();
    this.#writer = undefined;
  }

  /** `workspace.base` for the tree as it is now. */
  async base(): Promise<void> {
    this.#tree = await scanTree(this.root, [], this);
    const ref = await this.artifacts.put(manifestBytes(this.#tree, this));
    let bytes = 0;
    for (const entry of this.#tree.values()) if ("size" in entry) bytes += entry.size;
    await (await this.writer()).append([
      {
        type: "workspace.base",
        data: { manifest: ref.id, files: this.#tree.size, bytes, excluded: [".git/", ".harness/"] },
      },
    ]);
  }

  async turn(turn: number): Promise<void> {
    await (await this.writer()).append([{ type: "user.input", data: { text: `turn ${turn}`, turn } }]);
  }

  /** Run `change` on the workspace as call `callId` and record what it changed. */
  async call(
    callId: string,
    change: () => void | Promise<void>,
    source: EventData<"workspace.changed">["source"] = "shell",
  ): Promise<void> {
    const contents = snapshotBytes(this.root);
    await (await this.writer()).append([{ type: "tool.started", data: toolStarted(callId) }]);
    await change();
    const after = await scanTree(this.root, [], this);
    const diff = diffManifests(this.#tree, after);
    for (const { path } of [...diff.modified, ...diff.deleted]) {
      const bytes = contents.get(path);
      if (bytes !== undefined) await this.artifacts.put(bytes);
    }
    this.#tree = after;
    await (await this.writer()).append([
      { type: "workspace.changed", data: { call_id: callId, source, ...diff } },
      {
        type: "tool.result",
        data: {
          call_id: callId,
          name: "run_shell",
          status: "ok",
          summary: "done",
          content: "",
          duration_ms: 1,
        },
      },
    ]);
  }
}

function toolStarted(callId: string): EventData<"tool.started"> {
  const zero = "0".repeat(64);
  return {
    call_id: callId,
    name: "run_shell",
    arguments: {},
    arguments_hash: zero,
    tool_version: "1",
    schema_digest: zero,
    effect: "shell",
    batch: 0,
  };
}

/** Every file's bytes (for storing what a change replaces). */
function snapshotBytes(root: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir)) {
      if (prefix === "" && (name === ".harness" || name === ".git")) continue;
      const path = prefix === "" ? name : `${prefix}/${name}`;
      const info = lstatSync(join(dir, name));
      if (info.isDirectory()) walk(join(dir, name), path);
      else if (info.isFile()) out.set(path, readFileSync(join(dir, name)));
    }
  };
  walk(root, "");
  return out;
}

/**
 * The tree's exact bytes: each file's content (hex) and exec bit, each symlink's target; .harness
 * left out. `directories`: every directory as "dir" too.
 */
export function treeBytes(root: string, options: { directories?: boolean } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (prefix === "" && name === ".harness") continue;
      const path = prefix === "" ? name : `${prefix}/${name}`;
      const full = join(dir, name);
      const info = lstatSync(full);
      if (info.isSymbolicLink()) out[path] = `link:${readlinkSync(full)}`;
      else if (info.isDirectory()) {
        if (options.directories) out[path] = "dir";
        walk(full, path);
      } else out[path] = `${info.mode & 0o111 ? "x" : "-"}:${readFileSync(full).toString("hex")}`;
    }
  };
  walk(root, "");
  return out;
}

const binary = (seed: number, size: number) =>
  Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + seed * 7) % 256));

/**
 * A session mixing file writes and edits with shell commands that install, generate, rename and
 * delete files (binary ones, odd names, an exec bit, a symlink, a directory turned into a file),
 * with the tree's exact bytes taken after every call. `directories`: recorded as harness records
 * now, directories (and the trees taken) included; otherwise as a session recorded before it did.
 */
export async function mixedSession(directories = false): Promise<{
  rec: Recording;
  points: { seq: number; tree: Record<string, string> }[];
}> {
  const rec = new Recording("s1", directories);
  const at = (path: string) => join(rec.root, path);
  mkdirSync(at("src"));
  mkdirSync(at("bin"));
  writeFileSync(at("README.md"), "hello\n");
  writeFileSync(at("src/app.ts"), "export const a = 1;\n");
  writeFileSync(at("bin/run.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  writeFileSync(at("data.bin"), binary(1, 4096));
  writeFileSync(at("old name.txt"), "old\n");
  symlinkSync("README.md", at("link"));
  const points: { seq: number; tree: Record<string, string> }[] = [];
  const mark = async () => {
    const writer = await rec.writer();
    points.push({ seq: writer.length - 1, tree: treeBytes(rec.root, { directories }) });
  };
  await rec.base();
  await mark();
  await rec.turn(1);
  await rec.call(
    "c1",
    () => {
      writeFileSync(at("src/app.ts"), "export const a = 2;\n");
      mkdirSync(at("notes"));
      writeFileSync(at("notes/ü ñ.txt"), "unicode name\n");
    },
    "tool",
  );
  await mark();
  await rec.call("c2", () => writeFileSync(at("README.md"), "hello, edited\n"), "tool");
  await mark();
  await rec.turn(2);
  await rec.call("c3", () => {
    mkdirSync(at("node_modules/pkg"), { recursive: true });
    writeFileSync(at("node_modules/pkg/index.js"), "module.exports = 1;\n");
    writeFileSync(at("node_modules/pkg/cli"), binary(2, 1000), { mode: 0o755 });
    unlinkSync(at("data.bin"));
    chmodSync(at("bin/run.sh"), 0o644);
  });
  await mark();
  await rec.call("c4", () => {
    renameSync(at("old name.txt"), at("new name.txt"));
    mkdirSync(at("gen"));
    writeFileSync(at("gen/out.bin"), binary(3, 2048));
    unlinkSync(at("link"));
    symlinkSync("src/app.ts", at("link"));
  });
  await mark();
  await rec.turn(3);
  await rec.call("c5", () => {
    unlinkSync(at("src/app.ts"));
    writeFileSync(at("-dash file"), "dash\n");
    writeFileSync(at("odd\nname"), binary(4, 10));
  });
  await mark();
  await rec.call("c6", () => {
    rmSync(at("notes"), { recursive: true });
    rmSync(at("gen"), { recursive: true });
    writeFileSync(at("gen"), "gen is a file now\n");
  });
  await mark();
  return { rec, points };
}
