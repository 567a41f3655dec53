import { createHash } from "node:crypto";
import type { AnyRecord, RunStatus } from "../../index.js";
import { lastReadVersion } from "../read-version.js";
import { type LessonRun, type LessonSetup, runLesson } from "./lab.js";
import { HUMAN_EDIT, SUM_FILE } from "./repo.js";

/** A tool call's arguments, as the journal recorded them. */
type JsonObject = Extract<AnyRecord, { type: "model.reply" }>["data"]["calls"][number]["arguments"];

const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

/** One tool call as the journal recorded it. */
export interface CallTrace {
  /** The model step (1-based) whose reply made the call. */
  step: number;
  tool: string;
  arguments: JsonObject;
  status: string;
  code: string | null;
  summary: string;
}

/** What stopped the demonstrated action: a refused call, or the engine ending the run. */
export interface Rejection {
  step: number;
  by: string;
  code: string;
  message: string;
}

export interface LessonReport {
  name: string;
  title: string;
  /** What the case shows, in one or two sentences. */
  explains: string;
  status: RunStatus;
  reason: string | null;
  message: string | null;
  model_requests: number;
  tool_calls: number;
  calls: CallTrace[];
  rejection: Rejection | null;
  proposals: {
    proposal_id: string;
    path: string;
    base_version: string | null;
    preview: string;
    diff: string;
  }[];
  /** The agent changed no byte of the repository (people's edits during the run excepted). */
  repository_unchanged: boolean;
  expected: string;
  as_expected: boolean;
}

interface Case {
  setup: LessonSetup;
  title: string;
  explains: string;
  expected: string;
  check(report: Omit<LessonReport, "as_expected">): boolean;
}

const finish = (text: string) => ({ text });

/** A model that makes one call, then stops with `stop` whatever the call's outcome. */
const oneCallThenStop =
  (text: string, call: { id: string; name: string; arguments: JsonObject }, stop: string) =>
  ({ step }: { step: number }) =>
    step === 0 ? { text, calls: [call] } : finish(stop);

/** The successful path: search, read, propose bound to the version read, finish. */
const WORKFLOW: Case = {
  title: "search → read → propose → finish",
  explains:
    "The model searches both files it may read, reads the source (getting its version), proposes " +
    "`a + b` bound to that version and finishes. The run ends needs_review: the change is a " +
    "proposal with a preview, the repository is unchanged, nothing was compiled or tested.",
  expected: "needs_review, one proposal for src/sum.ts, repository unchanged",
  setup: {
    name: "workflow",
    script: ({ messages, step }) => {
      if (step === 0) {
        return {
          text: "README.md and src/sum.ts are in scope; search both for sum.",
          calls: [
            { id: "search-readme", name: "grep", arguments: { pattern: "sum", path: "README.md" } },
            { id: "search-source", name: "grep", arguments: { pattern: "sum", path: SUM_FILE } },
          ],
        };
      }
      if (step === 1) {
        return {
          text: "The README says sum adds; read the implementation.",
          calls: [{ id: "read-source", name: "read_file", arguments: { path: SUM_FILE } }],
        };
      }
      if (step === 2) {
        const version = lastReadVersion(messages);
        if (version === undefined) return finish("I could not read src/sum.ts, so I stop.");
        return {
          text: "It subtracts. Propose `a + b`, bound to the version I read.",
          calls: [
            {
              id: "propose-fix",
              name: "edit_file",
              arguments: { path: SUM_FILE, old_text: "a - b", new_text: "a + b", expected_version: version },
            },
          ],
        };
      }
      return finish("Proposed a + b in src/sum.ts. Not applied, compiled or tested: a reviewer decides.");
    },
  },
  check: (r) =>
    r.status === "needs_review" &&
    r.rejection === null &&
    r.repository_unchanged &&
    r.proposals.length === 1 &&
    r.proposals[0]?.path === SUM_FILE &&
    r.proposals[0].preview.includes("a + b"),
};

const BOUNDARIES: Case[] = [
  {
    title: "read outside the task's scope",
    explains:
      ".env exists, but the task lists only README.md and src/sum.ts as readable. The scope is " +
      "checked at every call, so the read is denied before the tool runs.",
    expected: "POLICY_DENIED (outside the task's read scope) at step 1",
    setup: {
      name: "scope-read",
      script: oneCallThenStop(
        "Read .env first.",
        { id: "read-env", name: "read_file", arguments: { path: ".env" } },
        ".env is outside my scope; stopping.",
      ),
    },
    check: (r) =>
      r.rejection?.code === "POLICY_DENIED" &&
      r.rejection.step === 1 &&
      r.rejection.message.includes("outside the task's read scope"),
  },
  {
    title: "unknown shell action",
    explains:
      "There is no shell tool. A call to one has no route to any implementation: it is " +
      "rejected by name before any validation or permission step.",
    expected: "UNKNOWN_TOOL at step 1",
    setup: {
      name: "unknown-action",
      script: oneCallThenStop(
        "Just cat it.",
        { id: "shell-1", name: "shell", arguments: { command: "cat .env" } },
        "There is no shell; stopping.",
      ),
    },
    check: (r) => r.rejection?.code === "UNKNOWN_TOOL" && r.rejection.step === 1,
  },
  {
    title: "a version that was never read",
    explains:
      "The model searches (a search is not a read), then proposes an edit with a made-up version. " +
      "It never read the file, so there is no observed version to bind the change to.",
    expected: "NOT_READ at step 2",
    setup: {
      name: "unread-version",
      script: ({ step }) => {
        if (step === 0) {
          return {
            text: "Search the source.",
            calls: [{ id: "search", name: "grep", arguments: { pattern: "sum", path: SUM_FILE } }],
          };
        }
        if (step === 1) {
          return {
            text: "Edit it with a version I did not read.",
            calls: [
              {
                id: "edit-unread",
                name: "edit_file",
                arguments: {
                  path: SUM_FILE,
                  old_text: "a - b",
                  new_text: "a + b",
                  expected_version: sha256Hex("a version this session never read"),
                },
              },
            ],
          };
        }
        return finish("The edit was refused; stopping.");
      },
    },
    check: (r) => r.rejection?.code === "NOT_READ" && r.rejection.step === 2 && r.proposals.length === 0,
  },
  {
    title: "a stale version (the file changed after the read)",
    explains:
      "The model reads src/sum.ts; then a person adds input validation to it. The model's edit is " +
      "bound to the version it read, which is no longer current: it is refused instead of " +
      "overwriting the person's change.",
    expected: "STALE_VERSION at step 2, the person's change kept",
    setup: {
      name: "stale-version",
      script: async ({ messages, step, humanEdit }) => {
        if (step === 0) {
          return {
            text: "Read the source.",
            calls: [{ id: "read", name: "read_file", arguments: { path: SUM_FILE } }],
          };
        }
        if (step === 1) {
          await humanEdit(SUM_FILE, HUMAN_EDIT);
          return {
            text: "Propose the fix on the version I read.",
            calls: [
              {
                id: "edit-stale",
                name: "edit_file",
                arguments: {
                  path: SUM_FILE,
                  old_text: "a - b",
                  new_text: "a + b",
                  expected_version: lastReadVersion(messages) ?? "",
                },
              },
            ],
          };
        }
        return finish("The file changed under me; it needs a fresh read.");
      },
    },
    check: (r) => r.rejection?.code === "STALE_VERSION" && r.rejection.step === 2 && r.proposals.length === 0,
  },
  {
    title: "a repeated search exhausts a 2-request budget",
    explains:
      "With at most 2 model requests, a model that searches twice never gets a third turn: the " +
      "engine stops the run before requesting it.",
    expected: "budget_exhausted after 2 model requests",
    setup: {
      name: "step-budget",
      limits: { maxModelRequests: 2 },
      script: ({ step }) => ({
        text: "Search again.",
        calls: [{ id: `search-${step}`, name: "grep", arguments: { pattern: "sum", path: SUM_FILE } }],
      }),
    },
    check: (r) => r.status === "stopped" && r.reason === "budget_exhausted" && r.model_requests === 2,
  },
  {
    title: "a context window too small for the first request",
    explains:
      "The first request (system prompt, goal, tool definitions) is estimated at more tokens " +
      "than the context window leaves after the reply's reserve, so the run stops before any model call.",
    expected: "context_exhausted with 0 model requests",
    setup: {
      name: "context-budget",
      contextWindow: 200,
      script: () => finish("unreachable"),
    },
    check: (r) => r.status === "stopped" && r.reason === "context_exhausted" && r.model_requests === 0,
  },
];

/** Run the workflow demonstration. */
export function workflowLesson(): Promise<LessonReport> {
  return runCase(WORKFLOW);
}

/** Run every boundary demonstration, in order. */
export async function boundaryLessons(): Promise<LessonReport[]> {
  const reports: LessonReport[] = [];
  for (const entry of BOUNDARIES) reports.push(await runCase(entry));
  return reports;
}

async function runCase(entry: Case): Promise<LessonReport> {
  const run = await runLesson(entry.setup);
  const report = describeRun(entry, run);
  return { ...report, as_expected: entry.check(report) };
}

function describeRun(entry: Case, run: LessonRun): Omit<LessonReport, "as_expected"> {
  const calls = callTraces(run.records);
  const refused = calls.find((call) => call.status !== "ok");
  const { summary } = run;
  let rejection: Rejection | null = null;
  if (refused) {
    rejection = {
      step: refused.step,
      by: refused.tool,
      code: refused.code ?? refused.status,
      message: refused.summary,
    };
  } else if (summary.status === "stopped" && summary.reason !== null) {
    rejection = {
      step: summary.model_requests + 1,
      by: "engine",
      code: summary.reason,
      message: summary.message ?? "",
    };
  }
  return {
    name: entry.setup.name,
    title: entry.title,
    explains: entry.explains,
    status: summary.status,
    reason: summary.reason,
    message: summary.message,
    model_requests: summary.model_requests,
    tool_calls: summary.tool_calls,
    calls,
    rejection,
    proposals: run.proposals.map((p) => ({
      proposal_id: p.proposal_id,
      path: p.path,
      base_version: p.base_version,
      preview: p.content,
      diff: p.diff,
    })),
    repository_unchanged: run.unchangedByAgent,
    expected: entry.expected,
  };
}

function callTraces(records: readonly AnyRecord[]): CallTrace[] {
  const made = new Map<string, { step: number; arguments: JsonObject }>();
  const traces: CallTrace[] = [];
  for (const record of records) {
    if (record.type === "model.reply") {
      for (const call of record.data.calls)
        made.set(call.id, { step: record.data.step + 1, arguments: call.arguments });
    }
    if (record.type === "tool.result") {
      const origin = made.get(record.data.call_id);
      traces.push({
        step: origin?.step ?? 0,
        tool: record.data.name,
        arguments: origin?.arguments ?? {},
        status: record.data.status,
        code: record.data.error_type ?? null,
        summary: record.data.summary,
      });
    }
  }
  return traces;
}

/** The setup of a lesson by name (to run it directly with runLesson). */
export function lessonSetup(name: string): LessonSetup {
  const found = [WORKFLOW, ...BOUNDARIES].find((entry) => entry.setup.name === name);
  if (!found) throw new Error(`no lesson named ${JSON.stringify(name)}`);
  return found.setup;
}
