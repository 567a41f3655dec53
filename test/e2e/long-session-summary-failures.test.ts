import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockServer } from "../e2e-providers/mock-server.js";
import {
  COMPACTION_MARKER,
  GOAL,
  type LoggedRequest,
  loggedRequests,
  longEnv,
  longWorkspace,
  SESSION,
  WINDOW,
} from "../support/long-session.js";
import {
  type CliResult,
  ensureBuilt,
  expectExit,
  finished,
  type JournalLine,
  journalFile,
  jsonSummary,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
} from "./helpers.js";

/**
 * When the request for a summary fails: a transient failure is retried like any model request
 * (journaled, the same request sent again), a final failure or an empty summary stops the run
 * with context_exhausted and says why, and `harness compact` reports the failure with exit 2,
 * appending only the attempt and its failure.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const READS = 12;

/**
 * Reads the data parts READS times, then finishes. How it answers summary requests is chosen by
 * LONG_SUMMARY (the script's bytes, and so the session's model identity, stay the same):
 * "ok", "transient-once" (the first one in a process fails transiently), "transient" (every one
 * fails transiently), "fatal", "empty".
 */
async function script(): Promise<{ script: string; log: string }> {
  const dir = await tempDir("harness-summary-script-");
  const log = join(dir, "requests.jsonl");
  const path = join(dir, "summaries.mjs");
  await writeFile(
    path,
    `import { appendFileSync } from "node:fs";
let failed = false;
export default function (messages, step) {
  const compaction = String(messages[messages.length - 1].content).startsWith(${JSON.stringify(COMPACTION_MARKER)});
  appendFileSync(${JSON.stringify(log)}, JSON.stringify({ step, compaction, messages }) + "\\n");
  if (compaction) {
    const mode = process.env.LONG_SUMMARY ?? "ok";
    if (mode === "transient" || (mode === "transient-once" && !failed)) {
      failed = true;
      return { error: { kind: "transient", message: "the summarizer is overloaded" } };
    }
    if (mode === "fatal") return { error: { kind: "fatal", message: "the summarizer is broken" } };
    if (mode === "empty") return { text: "  " };
    return { text: "Progress: " + step + " reads done. Next: keep reading." };
  }
  if (step < ${READS}) return { calls: [{ id: "r" + step, name: "read_file", arguments: { path: "data/part-" + (step % 10) + ".txt" } }] };
  return { text: "finished" };
}
`,
  );
  await writeFile(log, "");
  return { script: path, log };
}

async function harnessWith(summaries: string, args: string[]): Promise<CliResult> {
  const env = { ...(await longEnv()), LONG_SUMMARY: summaries };
  return finished(startHarness(args, { env }));
}

const runArgs = (workspace: string, path: string, extra: string[] = []) => [
  "run",
  ...["--script", path, "--workspace", workspace, "--tools", "read_file", "--context-window", String(WINDOW)],
  ...["--session", SESSION, "--json", ...extra, GOAL],
];

/** The records from the first summary request on. */
function fromFirstSummary(records: JournalLine[]): JournalLine[] {
  return records.slice(
    records.findIndex((r) => r.type === "model.started" && r.data.purpose === "compaction"),
  );
}

const summaryRequests = (requests: LoggedRequest[]) => requests.filter((r) => r.compaction);

describe("a summary request that fails", () => {
  it("transiently is retried like any model request: journaled, the same request sent again, and the run goes on", async () => {
    const workspace = await longWorkspace();
    const { script: path, log } = await script();
    const result = await harnessWith("transient-once", runArgs(workspace, path));
    expectExit(result, 0);
    expect(jsonSummary(result)).toMatchObject({ status: "unverified", tool_calls: READS });

    const records = await readJournal(workspace, SESSION);
    const [first, retried, second, compacted] = fromFirstSummary(records);
    const step = first?.data.step;
    expect(first).toMatchObject({ type: "model.started", data: { purpose: "compaction", attempt: 0 } });
    expect(retried).toMatchObject({
      type: "model.retryable_error",
      data: { step, attempt: 0, code: "SCRIPT_ERROR", message: "the summarizer is overloaded" },
    });
    expect(second).toMatchObject({
      type: "model.started",
      data: { step, purpose: "compaction", attempt: 1 },
    });
    expect(compacted).toMatchObject({
      type: "context.compacted",
      data: { step, attempt: 1, summary: `Progress: ${step} reads done. Next: keep reading.` },
    });
    // The retry sent the very same request.
    const [sent, again] = summaryRequests(await loggedRequests(log));
    expect(again?.step).toBe(step);
    expect(JSON.stringify(again?.messages)).toBe(JSON.stringify(sent?.messages));
    expect(result.stderr).toContain("the summarizer is overloaded");
  });

  it("transiently every time gives up after the attempt budget: context_exhausted, saying so", async () => {
    const workspace = await longWorkspace();
    const { script: path, log } = await script();
    const result = await harnessWith("transient", runArgs(workspace, path));
    expectExit(result, 2);
    const summary = jsonSummary(result);
    expect(summary).toMatchObject({ status: "stopped", reason: "context_exhausted" });
    expect(String(summary.message)).toMatch(
      /^the compaction request failed \(gave up after 4 attempts\): SCRIPT_ERROR: the summarizer is overloaded; the context could not be made small enough/,
    );
    const records = fromFirstSummary(await readJournal(workspace, SESSION));
    expect(records.map((r) => r.type)).toEqual([
      ...["model.started", "model.retryable_error", "model.started", "model.retryable_error"],
      ...["model.started", "model.retryable_error", "model.started", "model.failed", "run.stopped"],
    ]);
    expect(records.at(-2)?.data).toMatchObject({ attempt: 3, code: "SCRIPT_ERROR" });
    const sent = summaryRequests(await loggedRequests(log));
    expect(sent).toHaveLength(4);
    expect(new Set(sent.map((r) => JSON.stringify(r.messages))).size).toBe(1);
    // No ordinary request followed the failed summary.
    expect((await loggedRequests(log)).at(-1)?.compaction).toBe(true);

    // Retries count against the model-request budget: with room for two summary attempts, the
    // run stops as budget_exhausted after the second, without sending a third.
    const before =
      (await readJournal(workspace, SESSION)).filter((r) => r.type === "model.started").length - 4;
    const budgeted = await longWorkspace();
    const limited = await harnessWith(
      "transient",
      runArgs(budgeted, path, ["--max-model-requests", String(before + 2)]),
    );
    expectExit(limited, 2);
    expect(jsonSummary(limited)).toMatchObject({
      reason: "budget_exhausted",
      model_requests: before + 2,
      message: `the model-request budget (${before + 2}) is used up`,
    });
    expect(fromFirstSummary(await readJournal(budgeted, SESSION)).map((r) => r.type)).toEqual([
      ...["model.started", "model.retryable_error", "model.started", "model.retryable_error", "run.stopped"],
    ]);
  });

  it.each([
    ["fatal", "the compaction request failed: SCRIPT_ERROR: the summarizer is broken", "SCRIPT_ERROR"],
    ["empty", "the compaction reply had no summary text", "COMPACTION_FAILED"],
  ])(
    "%s is not retried: the run stops with context_exhausted and a clear message",
    async (mode, why, code) => {
      const workspace = await longWorkspace();
      const { script: path, log } = await script();
      const result = await harnessWith(mode, runArgs(workspace, path));
      expectExit(result, 2);
      const message =
        `${why}; the context could not be made small enough for the next request ` +
        "(resume the session to try again, or give it a larger --context-window if the model has one)";
      expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "context_exhausted", message });
      const records = fromFirstSummary(await readJournal(workspace, SESSION));
      expect(records.map((r) => r.type)).toEqual(["model.started", "model.failed", "run.stopped"]);
      expect(records[1]?.data).toMatchObject({ attempt: 0, code, message });
      expect(records[2]?.data).toEqual({ status: "stopped", reason: "context_exhausted", message });
      const requests = await loggedRequests(log);
      expect(summaryRequests(requests)).toHaveLength(1);
      expect(requests.at(-1)?.compaction).toBe(true);

      // A resume with a model that summarizes compacts again and finishes the task.
      const resumed = await harnessWith("ok", runArgs(workspace, path));
      expectExit(resumed, 0);
      expect(jsonSummary(resumed)).toMatchObject({ status: "unverified", tool_calls: READS });
    },
  );
});

describe("a summary request and the model-request budget", () => {
  it("counts: the request it made room for is not sent past the budget", async () => {
    const first = await longWorkspace();
    const { script: path, log } = await script();
    expectExit(await harnessWith("ok", runArgs(first, path)), 0);
    const started = (await readJournal(first, SESSION)).filter((r) => r.type === "model.started");
    const before = started.findIndex((r) => r.data.purpose === "compaction");
    expect(before).toBeGreaterThan(1);

    // Room for the requests before the first summary and the summary itself, not one more.
    const budgeted = await longWorkspace();
    const sentBefore = (await loggedRequests(log)).length;
    const result = await harnessWith(
      "ok",
      runArgs(budgeted, path, ["--max-model-requests", String(before + 1)]),
    );
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({
      reason: "budget_exhausted",
      model_requests: before + 1,
      message: `the model-request budget (${before + 1}) is used up`,
    });
    const sent = (await loggedRequests(log)).slice(sentBefore);
    expect(sent).toHaveLength(before + 1);
    expect(sent.at(-1)?.compaction).toBe(true);
    expect((await readJournal(budgeted, SESSION)).slice(-2).map((r) => r.type)).toEqual([
      "context.compacted",
      "run.stopped",
    ]);
  });
});

describe("harness compact with a failing summary", () => {
  /** A session stopped by its request budget after four reads (no compaction yet). */
  async function stopped(): Promise<{ workspace: string; path: string; log: string }> {
    const workspace = await longWorkspace();
    const { script: path, log } = await script();
    const run = await harnessWith("ok", runArgs(workspace, path, ["--max-model-requests", "3"]));
    expectExit(run, 2);
    expect(jsonSummary(run)).toMatchObject({ reason: "budget_exhausted" });
    return { workspace, path, log };
  }

  it("exits 2 with the reason and appends only the attempt, its failure and the stop", async () => {
    const { workspace, path, log } = await stopped();
    const before = readFileSync(journalFile(workspace, SESSION));
    const sentBefore = (await loggedRequests(log)).length;
    const compact = await harnessWith("fatal", [
      "compact",
      SESSION,
      "--script",
      path,
      "--workspace",
      workspace,
    ]);
    expectExit(compact, 2);
    expect(compact.stderr).toContain("the compaction request failed: SCRIPT_ERROR: the summarizer is broken");
    expect(compact.stderr).not.toMatch(/\n\s+at /);

    const after = readFileSync(journalFile(workspace, SESSION));
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
    const appended = (await readJournal(workspace, SESSION)).slice(
      before.toString("utf8").split("\n").length - 1,
    );
    expect(appended.map((r) => r.type)).toEqual(["model.started", "model.failed", "run.stopped"]);
    expect(appended[0]?.data).toMatchObject({ purpose: "compaction", attempt: 0 });
    expect(appended[2]?.data).toMatchObject({ reason: "context_exhausted" });
    expect(summaryRequests((await loggedRequests(log)).slice(sentBefore))).toHaveLength(1);

    // A transient failure is retried: the compaction then succeeds (exit 0).
    const retried = await harnessWith("transient-once", [
      ...["compact", SESSION, "--script", path, "--workspace", workspace, "--json"],
    ]);
    expectExit(retried, 0);
    // The goal and the first two turns (a call and its result each) before the latest turn.
    expect(JSON.parse(retried.stdout)).toMatchObject({
      session: SESSION,
      compacted: { replaced_messages: 5 },
    });
    const tail = (await readJournal(workspace, SESSION)).slice(-4).map((r) => r.type);
    expect(tail).toEqual(["model.started", "model.retryable_error", "model.started", "context.compacted"]);
  });
});

describe("an interrupt while a summary is asked for", () => {
  it("cancels the run (exit 130, run.cancelled), not a context_exhausted failure, and resume finishes it", async () => {
    let child: ChildProcess | undefined;
    const server = await startMockServer({
      dialect: "chat",
      script: (request) => {
        const last = request.turns.at(-1);
        if (last?.role === "user" && last.text.startsWith(COMPACTION_MARKER)) {
          // Never answered: the interrupt lands while the request is in flight.
          if (!interrupted) child?.kill("SIGINT");
          if (!interrupted) return { kind: "stall" };
          return { kind: "text", text: "Progress: reading. Next: keep reading." };
        }
        // The step from the last call (after a summary, older turns are gone).
        const lastCall = request.turns.findLast((t) => t.role === "assistant")?.calls.at(-1)?.id;
        const step = lastCall === undefined ? 0 : Number(lastCall.slice(1)) + 1;
        return step < READS
          ? {
              kind: "calls",
              calls: [{ id: `r${step}`, name: "read_file", args: { path: `data/part-${step % 10}.txt` } }],
            }
          : { kind: "text", text: "finished" };
      },
    });
    let interrupted = false;
    try {
      const workspace = await longWorkspace();
      const model = ["--provider", "openai-compatible", "--model", "mock", "--base-url", server.baseUrl];
      const args = [
        "run",
        ...model,
        ...["--workspace", workspace, "--tools", "read_file", "--context-window", String(WINDOW)],
        ...["--session", SESSION, "--json", GOAL],
      ];
      const env = await longEnv();
      child = startHarness(args, { env });
      const result = await finished(child);
      interrupted = true;
      expectExit(result, 130);
      expect(result.stderr).toContain("SIGINT received");
      const records = fromFirstSummary(await readJournal(workspace, SESSION));
      expect(records.map((r) => r.type)).toEqual(["model.started", "run.cancelled"]);
      expect(records[0]?.data).toMatchObject({ purpose: "compaction" });

      const resumed = await finished(startHarness(args, { env }));
      expectExit(resumed, 0);
      expect(jsonSummary(resumed)).toMatchObject({ status: "unverified", tool_calls: READS });
    } finally {
      await server.close();
    }
  });
});
