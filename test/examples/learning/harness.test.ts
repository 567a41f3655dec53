import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runLesson, sameFiles } from "../../../src/examples/learning/lab.js";
import {
  boundaryLessons,
  type LessonReport,
  lessonSetup,
  workflowLesson,
} from "../../../src/examples/learning/lessons.js";
import { HUMAN_EDIT, SUM_FILE, VIRTUAL_REPO } from "../../../src/examples/learning/repo.js";
import { sha256Hex } from "../../../src/shared/hash.js";

const text = (bytes: Uint8Array | undefined) =>
  bytes === undefined ? undefined : Buffer.from(bytes).toString("utf8");

describe("learning:harness workflow", () => {
  it("ends needs_review with a preview of a + b bound to the version read, repository unchanged", async () => {
    const report = await workflowLesson();
    expect(report.as_expected).toBe(true);
    expect(report.status).toBe("needs_review");
    expect(report.model_requests).toBe(4);
    expect(report.calls.map((c) => [c.step, c.tool, c.status])).toEqual([
      [1, "grep", "ok"],
      [1, "grep", "ok"],
      [2, "read_file", "ok"],
      [3, "edit_file", "ok"],
    ]);
    const edit = report.calls[3]!;
    expect(edit.arguments.expected_version).toBe(sha256Hex(VIRTUAL_REPO[SUM_FILE]!));
    expect(report.proposals).toHaveLength(1);
    const proposal = report.proposals[0]!;
    expect(proposal.base_version).toBe(sha256Hex(VIRTUAL_REPO[SUM_FILE]!));
    expect(proposal.preview).toBe("export const sum = (a: number, b: number) => a + b;\n");
    expect(proposal.diff).toContain("-export const sum = (a: number, b: number) => a - b;");
    expect(proposal.diff).toContain("+export const sum = (a: number, b: number) => a + b;");
    expect(report.repository_unchanged).toBe(true);
  });

  it("leaves every byte of the repository as it was, its journal beside it not counted", async () => {
    const run = await runLesson(lessonSetup("workflow"));
    expect(run.summary.status).toBe("needs_review");
    expect(sameFiles(run.before, run.after)).toBe(true);
    expect(Object.keys(run.after).sort()).toEqual(Object.keys(VIRTUAL_REPO).sort());
    for (const [path, content] of Object.entries(VIRTUAL_REPO)) expect(text(run.after[path])).toBe(content);
    expect(run.records.filter((r) => r.type === "proposal.recorded")).toHaveLength(1);
  });
});

describe("a lesson's session", () => {
  it("is set up without the person's user config (a config denying reads changes nothing)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "harness-learning-config-"));
    const saved = process.env.HARNESS_CONFIG;
    try {
      const config = join(dir, "config.json");
      await writeFile(config, JSON.stringify({ permissions: { deny: ["read_file"] } }));
      process.env.HARNESS_CONFIG = config;
      const report = await workflowLesson();
      expect(report.as_expected).toBe(true);
      expect(report.calls.find((call) => call.tool === "read_file")?.status).toBe("ok");
    } finally {
      if (saved === undefined) delete process.env.HARNESS_CONFIG;
      else process.env.HARNESS_CONFIG = saved;
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("learning:harness boundaries", () => {
  let reports: LessonReport[];
  const byName = (name: string) => {
    const report = reports.find((r) => r.name === name);
    if (!report) throw new Error(`no case ${name}`);
    return report;
  };

  it("runs every case as described", async () => {
    reports = await boundaryLessons();
    expect(reports.map((r) => [r.name, r.as_expected])).toEqual([
      ["scope-read", true],
      ["unknown-action", true],
      ["unread-version", true],
      ["stale-version", true],
      ["step-budget", true],
      ["context-budget", true],
    ]);
  });

  it("denies the out-of-scope read at step 1 by scope, and .env is never read", () => {
    const r = byName("scope-read");
    expect(r.rejection).toMatchObject({ step: 1, code: "POLICY_DENIED" });
    expect(r.rejection?.message).toContain("outside the task's read scope");
    expect(r.calls[0]?.status).toBe("denied");
    expect(JSON.stringify(r)).not.toContain("not-a-real-secret");
    expect(r.model_requests).toBe(2);
    expect(r.repository_unchanged).toBe(true);
  });

  it("rejects the unknown shell action at step 1 as UNKNOWN_TOOL", () => {
    const r = byName("unknown-action");
    expect(r.rejection).toMatchObject({ step: 1, code: "UNKNOWN_TOOL", by: "shell" });
    expect(r.model_requests).toBe(2);
    expect(r.repository_unchanged).toBe(true);
  });

  it("tells a never-read version (NOT_READ) from a stale one (STALE_VERSION)", () => {
    const unread = byName("unread-version");
    const stale = byName("stale-version");
    expect(unread.rejection).toMatchObject({ step: 2, code: "NOT_READ" });
    expect(stale.rejection).toMatchObject({ step: 2, code: "STALE_VERSION" });
    expect(unread.calls.map((c) => c.status)).toEqual(["ok", "conflict"]);
    expect(stale.calls.map((c) => c.status)).toEqual(["ok", "conflict"]);
    for (const r of [unread, stale]) {
      expect(r.proposals).toEqual([]);
      expect(r.model_requests).toBe(3);
      expect(r.repository_unchanged).toBe(true);
    }
  });

  it("keeps the person's edit in the stale case, byte for byte", async () => {
    const run = await runLesson(lessonSetup("stale-version"));
    expect(text(run.after[SUM_FILE])).toBe(HUMAN_EDIT);
    expect(sameFiles(run.after, run.expected)).toBe(true);
    expect(sameFiles(run.after, run.before)).toBe(false);
  });

  it("stops a repeated search at the 2-request budget", () => {
    const r = byName("step-budget");
    expect(r).toMatchObject({
      status: "stopped",
      reason: "budget_exhausted",
      model_requests: 2,
      tool_calls: 2,
    });
    expect(r.rejection).toMatchObject({ by: "engine", code: "budget_exhausted" });
    expect(r.repository_unchanged).toBe(true);
  });

  it("stops before the first model call when the context window is too small", () => {
    const r = byName("context-budget");
    expect(r).toMatchObject({
      status: "stopped",
      reason: "context_exhausted",
      model_requests: 0,
      tool_calls: 0,
    });
    expect(r.calls).toEqual([]);
    expect(r.repository_unchanged).toBe(true);
  });
});
