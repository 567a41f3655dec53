import { readFile, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FileArtifactStore } from "../../artifacts/file-store.js";
import { FileEqualsCheck } from "../../engine/acceptance.js";
import type { RunSummary } from "../../engine/options.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import { modePolicy } from "../../policy/policy-permissions.js";
import type { ModelMessage } from "../../protocol/types.js";
import type { ModelRequest, Provider } from "../../providers/provider.js";
import { ScriptedProvider } from "../../providers/scripted/provider.js";
import type { ScriptFunction } from "../../providers/scripted/script.js";
import type { WriteMode } from "../../rules/modes.js";
import { packTurn } from "../../session/pack.js";
import { sha256Hex } from "../../shared/hash.js";
import { createFileTools } from "../../tools/builtin.js";
import {
  type Check,
  type EvalSuite,
  type EvalTask,
  type TaskRun,
  type TaskWorkspace,
  toolResults,
} from "../suite.js";

/**
 * The fault table (one row per way a run can go wrong) as eval tasks: each injects one fault into a run of
 * the file tools on a temp workspace and checks the evidence the table names, on disk and in
 * the journal.
 */

export const FAULTS_SUITE_VERSION = "1";

/**
 * The well-behaved run every fault is injected into: a scripted model that reads one file and
 * fixes it with one edit bound to the version it read, and the content the host's check wants.
 * The caller supplies it (the CLI passes the offline demo's run, src/examples/demo), so this
 * suite does not reach up to the examples.
 */
export interface FaultBaseline {
  file: string;
  initial: string;
  expected: string;
  goal: string;
  script: ScriptFunction;
}

const SESSION = "fault";

/** Counts what the engine sent, to prove a resumed session did not ask the model again. */
class CountingProvider implements Provider {
  requests = 0;
  constructor(private readonly inner: Provider) {}
  get identity() {
    return this.inner.identity;
  }
  stream(request: ModelRequest, signal: AbortSignal) {
    this.requests += 1;
    return this.inner.stream(request, signal);
  }
}

interface FaultRun {
  provider: Provider;
  write?: WriteMode;
  accept?: boolean;
}

function runEngine(ws: TaskWorkspace, b: FaultBaseline, options: FaultRun): Promise<RunSummary> {
  const policy = modePolicy({ write: options.write ?? "allow" });
  return packTurn({
    sessionId: SESSION,
    mode: "auto",
    goal: b.goal,
    store: ws.store,
    workspace: { name: "eval", fingerprint: sha256Hex(`faults/${ws.root}`) },
    fs: ws.fs,
    hostRoot: ws.root,
    artifacts: new FileArtifactStore(ws.artifactsDir(SESSION)),
    tools: createFileTools(),
    provider: options.provider,
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: options.accept === false ? [] : [new FileEqualsCheck(ws.fs, b.file, b.expected)],
    limits: { maxModelAttempts: 1 },
    harnessVersion: "eval",
  }).done;
}

const baseline = (b: FaultBaseline) => ScriptedProvider.fromFunction(b.script, "faults-demo");
const turns = (list: unknown[]) => ScriptedProvider.fromTurns(list, "faults-turns");

function termination(summary: RunSummary): string {
  return summary.reason ? `${summary.status}:${summary.reason}` : summary.status;
}

async function fileText(ws: TaskWorkspace, b: FaultBaseline): Promise<string> {
  return readFile(join(ws.root, b.file), "utf8");
}

function count(records: readonly AnyRecord[], type: string): number {
  return records.filter((r) => r.type === type).length;
}

async function outcome(
  ws: TaskWorkspace,
  b: FaultBaseline,
  summary: RunSummary,
  checks: Check[],
  effects: Record<string, string | number | boolean>,
): Promise<TaskRun> {
  const content = await fileText(ws, b);
  return {
    actual: termination(summary),
    termination: termination(summary),
    checks,
    effects: { ...effects, file: content },
    effectsSummary: `${b.file}: ${JSON.stringify(content)}`,
    model_requests: summary.model_requests,
    tool_calls: summary.tool_calls,
  };
}

async function seeded(ws: TaskWorkspace, b: FaultBaseline): Promise<void> {
  await writeFile(join(ws.root, b.file), b.initial);
}

const truncatedStream = (b: FaultBaseline): EvalTask => ({
  id: "truncated-arguments",
  description: "the model's argument stream is cut off: nothing is executed",
  expected: "stopped:protocol_error",
  async run(ws) {
    await seeded(ws, b);
    const args = JSON.stringify({ path: b.file, content: "overwritten by a truncated reply" });
    const stream = [
      { type: "tool_call_delta", call_id: "w", name: "write_file", arguments: args.slice(0, 20) },
      { type: "end", reason: "length" },
    ];
    const summary = await runEngine(ws, b, { provider: turns([{ stream }]) });
    const records = await ws.store.read(SESSION);
    return outcome(
      ws,
      b,
      summary,
      [
        { name: "no tool.started", passed: count(records, "tool.started") === 0 },
        { name: "the file is unchanged", passed: (await fileText(ws, b)) === b.initial },
      ],
      { tool_started: count(records, "tool.started") },
    );
  },
});

const writesDisabled = (b: FaultBaseline): EvalTask => ({
  id: "writes-disabled",
  description: "writes are denied by policy: a denied result and the original content kept",
  expected: "stopped:acceptance_failed",
  async run(ws) {
    await seeded(ws, b);
    const summary = await runEngine(ws, b, { provider: baseline(b), write: "deny" });
    const records = await ws.store.read(SESSION);
    const edit = toolResults(records, "edit_file")[0];
    return outcome(
      ws,
      b,
      summary,
      [
        {
          name: "the edit was denied by policy",
          passed: edit?.status === "denied" && edit.error_type === "POLICY_DENIED",
        },
        { name: "the original content is kept", passed: (await fileText(ws, b)) === b.initial },
        { name: "no run.finished", passed: count(records, "run.finished") === 0 },
      ],
      { edit_status: edit?.status ?? "none" },
    );
  },
});

const modifiedAfterRead = (b: FaultBaseline): EvalTask => ({
  id: "modified-after-read",
  description: "the file changes between read and edit: conflict, the newer content is not overwritten",
  expected: "unverified",
  async run(ws) {
    await seeded(ws, b);
    // Someone else's content that still starts with the baseline's first word (the text its edit
    // replaces): only the version the edit is bound to can stop it.
    const other = `${b.initial.split(" ")[0]} someone else's edit\n`;
    const script = async (messages: readonly ModelMessage[], step: number, agent: string) => {
      if (step === 1) await writeFile(join(ws.root, b.file), other);
      return step <= 1 ? b.script(messages, step, agent) : { text: "done" };
    };
    const summary = await runEngine(ws, b, {
      provider: ScriptedProvider.fromFunction(script, "faults-modified"),
      accept: false,
    });
    const edit = toolResults(await ws.store.read(SESSION), "edit_file")[0];
    return outcome(
      ws,
      b,
      summary,
      [
        {
          name: "the edit ended in a STALE_VERSION conflict",
          passed: edit?.status === "conflict" && edit.error_type === "STALE_VERSION",
        },
        { name: "the newer content is not overwritten", passed: (await fileText(ws, b)) === other },
      ],
      { edit_status: edit?.status ?? "none" },
    );
  },
});

const startedWithoutResult = (b: FaultBaseline): EvalTask => ({
  id: "started-without-result",
  description: "a call started but its result is missing: unknown, review required, never re-executed",
  expected: "review_required:unknown_outcome",
  async run(ws) {
    await seeded(ws, b);
    await runEngine(ws, b, { provider: baseline(b) });
    // Cut the journal right after the edit's tool.started: the process "died" after the effect.
    const path = join(ws.root, ".harness", "sessions", SESSION, "events.jsonl");
    const lines = (await readFile(path, "utf8")).split("\n");
    const at = lines.findIndex((l) => l.includes('"tool.started"') && l.includes('"edit-1"'));
    if (at < 0) throw new Error("the edit never started");
    await truncate(path, Buffer.byteLength(`${lines.slice(0, at + 1).join("\n")}\n`));
    const provider = new CountingProvider(baseline(b));
    const summary = await runEngine(ws, b, { provider });
    const records = await ws.store.read(SESSION);
    const edits = toolResults(records, "edit_file");
    return outcome(
      ws,
      b,
      summary,
      [
        {
          name: "the edit's outcome is recorded as unknown",
          passed: edits.length === 1 && edits[0]?.status === "unknown",
        },
        { name: "the model was not asked again", passed: provider.requests === 0 },
        { name: "no call was re-executed", passed: count(records, "tool.started") === 2 },
      ],
      { resumed_model_requests: provider.requests },
    );
  },
});

const claimsCompletion = (b: FaultBaseline): EvalTask => ({
  id: "model-claims-completion",
  description: "the model claims it is done without doing anything: acceptance fails, no run.finished",
  expected: "stopped:acceptance_failed",
  async run(ws) {
    await seeded(ws, b);
    const summary = await runEngine(ws, b, { provider: turns([{ text: "All done, the file is fixed." }]) });
    const records = await ws.store.read(SESSION);
    const checked = records.find((r) => r.type === "acceptance.checked");
    return outcome(
      ws,
      b,
      summary,
      [
        {
          name: "acceptance was checked and failed",
          passed: checked?.type === "acceptance.checked" && !checked.data.accepted,
        },
        { name: "no run.finished", passed: count(records, "run.finished") === 0 },
        { name: "the file is unchanged", passed: (await fileText(ws, b)) === b.initial },
      ],
      {},
    );
  },
});

const changedAfterFinish = (b: FaultBaseline): EvalTask => ({
  id: "changed-after-finish",
  description:
    "the file changes after a verified finish: the re-check fails, the old success does not mask it",
  expected: "stopped:acceptance_failed",
  async run(ws) {
    await seeded(ws, b);
    const first = await runEngine(ws, b, { provider: baseline(b) });
    await writeFile(join(ws.root, b.file), `${b.expected}and more\n`);
    const provider = new CountingProvider(baseline(b));
    const second = await runEngine(ws, b, { provider });
    const records = await ws.store.read(SESSION);
    const verdicts = records.flatMap((r) => (r.type === "acceptance.checked" ? [r.data.accepted] : []));
    return outcome(
      ws,
      b,
      second,
      [
        { name: "the first run was verified", passed: first.status === "verified" },
        { name: "acceptance went true then false", passed: JSON.stringify(verdicts) === "[true,false]" },
        { name: "the model was not asked again", passed: provider.requests === 0 },
      ],
      { first: termination(first) },
    );
  },
});

export function createFaultsSuite(b: FaultBaseline): EvalSuite {
  return {
    name: "faults",
    version: FAULTS_SUITE_VERSION,
    description: "the fault table over the file tools",
    decision: "scripted",
    tasks: [
      truncatedStream(b),
      writesDisabled(b),
      modifiedAfterRead(b),
      startedWithoutResult(b),
      claimsCompletion(b),
      changedAfterFinish(b),
    ],
  };
}
