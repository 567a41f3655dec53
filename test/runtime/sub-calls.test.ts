import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import { createBatchTool } from "../../src/tools/batch/tool.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { defineTool } from "../../src/tools/tool.js";
import { engineFor, tempWorkspace, type Workspace } from "../support/session.js";

const MODULES = Array.from({ length: 12 }, (_, i) => `src/m${i + 1}.ts`);
const FILES: Record<string, string> = {
  ...Object.fromEntries(
    MODULES.map((path, i) => [path, `export const m${i + 1} = ${i % 3 === 0 ? "'legacy'" : "1"};\n`]),
  ),
  "secret/key.txt": "hunter2\n",
  "notes.txt": "keep me\n",
};

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace(FILES);
});
afterEach(async () => ws.cleanup());

/** A read-only tool that never answers for one module, so its per-tool timeout fires. */
const probe = defineTool({
  name: "probe_module",
  description: "Reads a module's first line; hangs for m7 (a test fixture for a timeout).",
  version: "1",
  input: z.strictObject({ path: z.string() }),
  effect: "read_only",
  idempotency: "idempotent",
  timeoutMs: 300,
  resources: (args) => ({ read: [`file:${args.path}`], write: [] }),
  concurrencySafe: () => true,
  execute: async (args, context) => {
    if (args.path.endsWith("/m7.ts")) {
      await new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }));
      throw new Error("aborted");
    }
    const text = new TextDecoder().decode(await context.fs.readFile(args.path));
    return { summary: `read ${args.path}`, content: text.split("\n")[0] ?? "", data: { path: args.path } };
  },
});

/** The model makes one batch call, then answers with the text it was shown. */
function batchThenAnswer(args: Record<string, unknown>) {
  const seen: string[] = [];
  const script = (messages: readonly { role: string; content?: unknown }[], step: number) => {
    if (step === 0) return { calls: [{ id: "c1", name: "batch", arguments: args }] };
    seen.push(String(messages.at(-1)?.content));
    return { text: "done" };
  };
  return { script, seen };
}

async function runBatch(
  args: Record<string, unknown>,
  options: { deny?: string[]; write?: "allow" | "deny" } = {},
) {
  const { script, seen } = batchThenAnswer(args);
  const engine = engineFor(ws, {
    script,
    tools: [...createFileTools(), createBatchTool(), probe],
    extra: options.deny
      ? (() => {
          const policy = modePolicy({ write: options.write ?? "allow", deny: options.deny });
          return { policy: { describe: policy.describe, digest: policy.digest, permissions: policy } };
        })()
      : {},
  });
  const summary = await engine.run();
  const journal = await ws.journal();
  return { summary, journal, seen };
}

const data = (records: AnyRecord[], type: string) =>
  records.filter((r) => r.type === type).map((r) => r.data as Record<string, unknown>);

describe("batch sub-calls through the pipeline", () => {
  it("journals each sub-call as tool.started / tool.result with parent_call_id and ids c1/1..N in issue order", async () => {
    const program = `
      const found = [];
      for (const path of ${JSON.stringify(MODULES.slice(0, 3))}) {
        const r = await tools.read_file({ path });
        found.push({ path, legacy: r.content.includes("legacy") });
      }
      return found;`;
    const { summary, journal, seen } = await runBatch({ program, expected: 3 });
    expect(summary.status).toBe("unverified");
    const started = data(journal, "tool.started");
    expect(started.map((s) => [s.call_id, s.name, s.parent_call_id ?? null])).toEqual([
      ["c1", "batch", null],
      ["c1/1", "read_file", "c1"],
      ["c1/2", "read_file", "c1"],
      ["c1/3", "read_file", "c1"],
    ]);
    const results = data(journal, "tool.result");
    expect(results.map((r) => [r.call_id, r.status, r.parent_call_id ?? null])).toEqual([
      ["c1/1", "ok", "c1"],
      ["c1/2", "ok", "c1"],
      ["c1/3", "ok", "c1"],
      ["c1", "ok", null],
    ]);
    const batch = results.at(-1)!;
    expect(batch.data).toMatchObject({
      value: [
        { path: "src/m1.ts", legacy: true },
        { path: "src/m2.ts", legacy: false },
        { path: "src/m3.ts", legacy: false },
      ],
      calls: 3,
      observed: 3,
      expected: 3,
      failed: [],
    });
    expect(String(batch.content).split("\n")[0]).toBe("observed 3 of 3 sub-calls (expected 3)");
    // The model was shown the batch's result only: no message for a sub-call.
    expect(seen[0]).toContain("observed 3 of 3 sub-calls");
    const reply = data(journal, "model.reply")[0]!;
    expect((reply.calls as { id: string }[]).map((c) => c.id)).toEqual(["c1"]);
  });

  it("a 12-module check with one module timing out reports observed 11 of 12 expected, the failure listed", async () => {
    const program = `
      const results = await Promise.all(${JSON.stringify(MODULES)}.map(async (path) => {
        try { return { path, line: (await tools.probe_module({ path })).content }; }
        catch (e) { return { path, error: e.code, call_id: e.call_id }; }
      }));
      return results;`;
    const { journal } = await runBatch({ program, expected: 12 });
    const batch = data(journal, "tool.result").find((r) => r.call_id === "c1")!;
    expect(batch.status).toBe("ok");
    const facts = batch.data as {
      observed: number;
      expected: number;
      calls: number;
      failed: unknown[];
      value: unknown[];
    };
    expect([facts.observed, facts.expected, facts.calls]).toEqual([11, 12, 12]);
    const m7 = data(journal, "tool.started").find(
      (s) => s.arguments && (s.arguments as { path?: string }).path === "src/m7.ts",
    )!;
    expect(facts.failed).toEqual([{ call_id: m7.call_id, tool: "probe_module", code: "TIMEOUT" }]);
    expect(String(batch.content).split("\n")[0]).toBe(
      `observed 11 of 12 expected; 1 failed: ${m7.call_id} probe_module TIMEOUT`,
    );
    expect(facts.value).toContainEqual({ path: "src/m7.ts", error: "TIMEOUT", call_id: m7.call_id });
    // Every sub-call has exactly one result in the journal.
    const ids = data(journal, "tool.result")
      .filter((r) => r.parent_call_id === "c1")
      .map((r) => r.call_id);
    expect(ids.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `c1/${i + 1}`).sort());
  });

  it("a deny rule on read_file(secret/**) denies the sub-call inside the program", async () => {
    const program = `
      try { await tools.read_file({ path: "secret/key.txt" }); return "read"; }
      catch (e) { return { code: e.code, call_id: e.call_id, tool: e.tool }; }`;
    const { journal } = await runBatch({ program }, { deny: ["read_file(secret/**)"] });
    const batch = data(journal, "tool.result").find((r) => r.call_id === "c1")!;
    expect((batch.data as { value: unknown }).value).toEqual({
      code: "POLICY_DENIED",
      call_id: "c1/1",
      tool: "read_file",
    });
    expect(batch.data).toMatchObject({
      calls: 1,
      observed: 0,
      failed: [{ call_id: "c1/1", tool: "read_file", code: "POLICY_DENIED" }],
    });
    const sub = data(journal, "tool.result").find((r) => r.call_id === "c1/1")!;
    expect([sub.status, sub.error_type, sub.parent_call_id]).toEqual(["denied", "POLICY_DENIED", "c1"]);
    expect(JSON.stringify(journal)).not.toContain("hunter2");
  });

  it("a write from a program is BATCH_TOOL_FORBIDDEN, journaled, never run: the file's bytes are unchanged", async () => {
    const program = `
      const out = [];
      for (const [name, args] of [["write_file", { path: "notes.txt", content: "gone" }], ["edit_file", { path: "notes.txt", old_text: "keep", new_text: "lose" }], ["batch", { program: "return 1" }]]) {
        try { await tools[name](args); out.push("ran"); } catch (e) { out.push(e.code); }
      }
      return out;`;
    const { journal } = await runBatch({ program }, { write: "allow" });
    expect(await readFile(join(ws.root, "notes.txt"), "utf8")).toBe("keep me\n");
    const batch = data(journal, "tool.result").find((r) => r.call_id === "c1")!;
    expect((batch.data as { value: unknown }).value).toEqual([
      "BATCH_TOOL_FORBIDDEN",
      "BATCH_TOOL_FORBIDDEN",
      "BATCH_TOOL_FORBIDDEN",
    ]);
    // Refused before anything started: results only, no tool.started for them.
    expect(data(journal, "tool.started").map((s) => s.call_id)).toEqual(["c1"]);
    expect(
      data(journal, "tool.result")
        .filter((r) => r.error_type === "BATCH_TOOL_FORBIDDEN")
        .map((r) => r.call_id),
    ).toEqual(["c1/1", "c1/2", "c1/3"]);
    expect(data(journal, "workspace.changed")).toEqual([]);
  });

  it("a file a program read is not observed by the model: a write to it still needs the model's own read", async () => {
    const engine = engineFor(ws, {
      script: (_messages, step) =>
        step === 0
          ? {
              calls: [
                {
                  id: "c1",
                  name: "batch",
                  arguments: { program: `return (await tools.read_file({ path: "notes.txt" })).summary;` },
                },
              ],
            }
          : step === 1
            ? {
                calls: [
                  { id: "w1", name: "write_file", arguments: { path: "notes.txt", content: "replaced\n" } },
                ],
              }
            : { text: "done" },
      tools: [...createFileTools(), createBatchTool()],
    });
    await engine.run();
    const results = data(await ws.journal(), "tool.result");
    expect(results.find((r) => r.call_id === "c1/1")?.status).toBe("ok");
    expect(results.find((r) => r.call_id === "w1")?.error_type).toBe("NOT_READ");
    expect(await readFile(join(ws.root, "notes.txt"), "utf8")).toBe("keep me\n");
  });

  it("10,000 sub-calls end at the calls bound with BATCH_LIMIT, every issued sub-call journaled once", async () => {
    const program = `const all = []; for (let i = 0; i < 10000; i++) all.push(tools.read_file({ path: "notes.txt" })); await Promise.all(all); return "all";`;
    const { journal } = await runBatch({ program });
    const batch = data(journal, "tool.result").find((r) => r.call_id === "c1")!;
    expect([batch.status, batch.error_type]).toEqual(["error", "BATCH_LIMIT"]);
    expect((batch.data as { limit: string }).limit).toBe("calls");
    const subResults = data(journal, "tool.result").filter((r) => r.parent_call_id === "c1");
    expect(subResults.length).toBeLessThanOrEqual(64);
    const started = data(journal, "tool.started")
      .filter((s) => s.parent_call_id === "c1")
      .map((s) => s.call_id);
    const settled = new Set(subResults.map((r) => r.call_id));
    for (const id of started) expect(settled.has(id)).toBe(true);
    expect(existsSync(join(ws.root, "notes.txt"))).toBe(true);
  });
});
