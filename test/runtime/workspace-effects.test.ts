import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { FileArtifactStore } from "../../src/artifacts/file-store.js";
import type { AnyNewEvent, AnyRecord } from "../../src/journal/vocabulary.js";
import { HookRunner } from "../../src/policy/hooks.js";
import { WorkspaceEffects } from "../../src/runtime/workspace-effects.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { defineTool } from "../../src/tools/tool.js";
import { manifestBytes } from "../../src/workspace/manifest.js";
import { TreeSnapshot } from "../../src/workspace/tree-snapshot.js";
import { run, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * The runtime records what every process-running call changed (compared before and after), and
 * journals a change made between calls by someone else as `outside` before the call, never as the
 * call's own.
 */

const spaces: Workspace[] = [];
afterEach(async () => {
  for (const ws of spaces.splice(0)) await ws.cleanup();
});

/** A process_execution tool that writes files the way a command would (not through the workspace fs). */
function commandTool(root: string) {
  return defineTool<{ files: Record<string, string> }>({
    name: "command",
    description: "Writes the given files the way a shell command would.",
    version: "1",
    input: z.strictObject({ files: z.record(z.string(), z.string()) }),
    effect: "process_execution",
    idempotency: "non_idempotent",
    timeoutMs: 10_000,
    resources: () => ({ exclusive: true }),
    concurrencySafe: () => false,
    async execute(args) {
      for (const [path, text] of Object.entries(args.files)) writeFileSync(join(root, path), text);
      return { summary: "wrote", content: "wrote" };
    },
  });
}

function effectsFor(ws: Workspace, excludes: string[] = []) {
  const tree = new TreeSnapshot({ root: ws.root, stateDir: join(ws.root, ".harness"), excludes });
  return new WorkspaceEffects(tree, new FileArtifactStore(join(ws.root, ".harness/sessions/s/artifacts")));
}

const file = (text: string) => ({ hash: sha256Hex(text), size: Buffer.byteLength(text), exec: false });

describe("WorkspaceEffects in the runtime", () => {
  it("attributes a change made while the model was thinking to outside, and the call's own to the call", async () => {
    const ws = await tempWorkspace({ "a.txt": "a0" });
    spaces.push(ws);
    const script = (_messages: unknown, step: number) => {
      if (step === 0)
        return { calls: [{ id: "c1", name: "command", arguments: { files: { "a.txt": "a1" } } }] };
      if (step === 1) {
        // A person saves a file while the next reply is being written.
        writeFileSync(join(ws.root, "person.txt"), "by hand");
        return { calls: [{ id: "c2", name: "command", arguments: { files: { "a.txt": "a2" } } }] };
      }
      return { text: "done" };
    };
    await run(ws, {
      script,
      tools: [...createFileTools(), commandTool(ws.root)],
      approver: { request: async () => ({ decision: "allow", scope: "once", by: "test" }) },
      runtime: { effects: effectsFor(ws) },
    });
    const records = await ws.journal();
    const changed = records.filter((r) => r.type === "workspace.changed");
    const outsideSeq = changed[1]!.seq;
    expect(changed.map((r) => r.data)).toEqual([
      {
        call_id: "c1",
        source: "shell",
        created: [],
        modified: [{ path: "a.txt", before: file("a0"), after: file("a1") }],
        deleted: [],
      },
      {
        call_id: `outside:${outsideSeq}`,
        source: "outside",
        created: [{ path: "person.txt", after: file("by hand") }],
        modified: [],
        deleted: [],
      },
      {
        call_id: "c2",
        source: "shell",
        created: [],
        modified: [{ path: "a.txt", before: file("a1"), after: file("a2") }],
        deleted: [],
      },
    ]);
    // The outside change is journaled after c2's intent and before anything c2 did.
    const started = records.find((r) => r.type === "tool.started" && r.data.call_id === "c2")!;
    expect(outsideSeq).toBeGreaterThan(started.seq);
    expect(outsideSeq).toBe(records.indexOf(changed[1]!));
    for (const text of ["a0", "a1"]) {
      expect(
        (await readFile(join(ws.root, ".harness/sessions/s/artifacts", sha256Hex(text)))).toString(),
      ).toBe(text);
    }
  });

  it("a file tool's write under a configured exclude is not recorded; one elsewhere is, with the directory it made", async () => {
    const ws = await tempWorkspace({});
    spaces.push(ws);
    const script = (_messages: unknown, step: number) =>
      step === 0
        ? {
            calls: [
              { id: "w1", name: "write_file", arguments: { path: "gen/out.txt", content: "generated" } },
              { id: "w2", name: "write_file", arguments: { path: "src/kept.txt", content: "kept" } },
            ],
          }
        : { text: "done" };
    await run(ws, { script, runtime: { effects: effectsFor(ws, ["gen/"]) } });
    const records = await ws.journal();
    expect(records.find((r) => r.type === "workspace.base")?.data).toMatchObject({
      files: 0,
      excluded: ["/.git/", "/.harness/", "gen/"],
    });
    expect(records.filter((r) => r.type === "workspace.changed").map((r) => r.data)).toEqual([
      {
        call_id: "w2",
        source: "tool",
        created: [
          { path: "src", after: { dir: true } },
          { path: "src/kept.txt", after: file("kept") },
        ],
        modified: [],
        deleted: [],
      },
    ]);
  });

  it("records nothing without a workspace record (an embedder that did not ask for one)", async () => {
    const ws = await tempWorkspace({});
    spaces.push(ws);
    const script = (_messages: unknown, step: number) =>
      step === 0
        ? { calls: [{ id: "w1", name: "write_file", arguments: { path: "x.txt", content: "x" } }] }
        : { text: "done" };
    await run(ws, { script });
    const types = (await ws.journal()).map((r) => r.type);
    expect(types.filter((t) => t.startsWith("workspace."))).toEqual([]);
  });
});

describe("WorkspaceEffects on a session recorded before directories were", () => {
  it("goes on without directories: an empty directory made since is not recorded, a file is", async () => {
    const ws = await tempWorkspace({ "a/keep.txt": "k" });
    spaces.push(ws);
    const artifacts = new FileArtifactStore(join(ws.root, ".harness/sessions/s/artifacts"));
    // The base an older harness wrote: a version 1 manifest, files only.
    const base = await artifacts.put(
      manifestBytes(new Map([["a/keep.txt", file("k")]]), { directories: false }),
    );
    const records = [
      {
        seq: 0,
        type: "workspace.base",
        data: { manifest: base.id, files: 1, bytes: 1, excluded: [".git/", ".harness/"] },
      },
    ] as unknown as AnyRecord[];
    const effects = effectsFor(ws);
    const recorded: AnyNewEvent[] = [];
    const journal = {
      record: async (events: AnyNewEvent[]) => void recorded.push(...events),
      nextSeq: () => 1 + recorded.length,
    };
    await effects.start(records, journal);
    expect(recorded).toEqual([]);
    mkdirSync(join(ws.root, "empty/deeper"), { recursive: true });
    writeFileSync(join(ws.root, "a/new.txt"), "n");
    await effects.outside(journal, { full: true });
    expect(recorded.map((e) => e.data)).toEqual([
      {
        call_id: "outside:1",
        source: "outside",
        created: [{ path: "a/new.txt", after: file("n") }],
        modified: [],
        deleted: [],
      },
    ]);
    // A directory replaced by a file is, to such a session, the file created.
    rmSync(join(ws.root, "empty"), { recursive: true });
    writeFileSync(join(ws.root, "empty"), "e");
    await effects.outside(journal);
    expect(recorded.at(-1)?.data).toMatchObject({
      created: [{ path: "empty", after: file("e") }],
      deleted: [],
    });
    effects.close();
  });
});

describe("WorkspaceEffects around hooks", () => {
  it("records a hook's change as the hook's; one made by a hook inside a compared call's execution as the call's", async () => {
    const ws = await tempWorkspace({ "a.txt": "a0" });
    spaces.push(ws);
    const hooks = new HookRunner([
      {
        kind: "notify",
        name: "validator",
        point: "before_validate",
        run: () => writeFileSync(join(ws.root, "validated.txt"), "v"),
      },
      {
        kind: "notify",
        name: "pre-exec",
        point: "before_execute",
        run: () => writeFileSync(join(ws.root, "pre.txt"), "p"),
      },
      // Applies to no call here: never compared around.
      { kind: "notify", name: "other", point: "after_project", tools: ["read_file"], run: () => undefined },
    ]);
    const script = (_messages: unknown, step: number) =>
      step === 0
        ? { calls: [{ id: "c1", name: "command", arguments: { files: { "a.txt": "a1" } } }] }
        : { text: "done" };
    await run(ws, {
      script,
      tools: [...createFileTools(), commandTool(ws.root)],
      approver: { request: async () => ({ decision: "allow", scope: "once", by: "test" }) },
      runtime: { effects: effectsFor(ws), hooks },
    });
    const changed = (await ws.journal()).filter((r) => r.type === "workspace.changed").map((r) => r.data);
    expect(changed).toEqual([
      {
        call_id: "hook:before_validate:c1",
        source: "hook",
        created: [{ path: "validated.txt", after: file("v") }],
        modified: [],
        deleted: [],
      },
      {
        call_id: "c1",
        source: "shell",
        created: [{ path: "pre.txt", after: file("p") }],
        modified: [{ path: "a.txt", before: file("a0"), after: file("a1") }],
        deleted: [],
      },
    ]);
  });
});
