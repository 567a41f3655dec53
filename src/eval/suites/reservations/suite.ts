import { join } from "node:path";
import { FileArtifactStore } from "../../../artifacts/file-store.js";
import type { RunSummary } from "../../../engine/options.js";
import type { AnyRecord } from "../../../journal/vocabulary.js";
import { ReservationDb } from "../../../packs/reservations/database.js";
import { createReserveTool, reserveInput } from "../../../packs/reservations/tools.js";
import { createHttpJsonProvider } from "../../../providers/http-json.js";
import type { Provider } from "../../../providers/provider.js";
import { ScriptedProvider } from "../../../providers/scripted/provider.js";
import { sha256Hex } from "../../../shared/hash.js";
import { createToolContext } from "../../../tools/context.js";
import type { Check, EvalSuite, EvalTask, TaskRun, TaskWorkspace } from "../../suite.js";
import {
  type DecisionMode,
  type PolicyName,
  RESERVATION_CASES,
  RESERVATIONS_SUITE_VERSION,
  type ReservationCase,
  SUITE_POLICIES,
} from "./cases.js";
import { effectChecks, effectsLine } from "./checks.js";
import { type PolicyServer, startPolicyServer } from "./policy-server.js";
import { runReservationTask } from "./session.js";
import { checkClaim, evidenceFrom, finalReplyText } from "./verify.js";
import { scriptFor } from "./workflow.js";

export interface ReservationsSuiteOptions {
  decision?: DecisionMode;
  harnessVersion?: string;
  cases?: readonly ReservationCase[];
}

/** The `reservations` suite: every case through the real engine with a fresh database. */
export function createReservationsSuite(options: ReservationsSuiteOptions = {}): EvalSuite {
  const decision = options.decision ?? "workflow";
  const cases = options.cases ?? RESERVATION_CASES;
  let server: PolicyServer | undefined;
  const providerFor = (name: PolicyName): Provider => {
    if (decision === "workflow") {
      return ScriptedProvider.fromFunction(scriptFor(SUITE_POLICIES[name]!), `reservations-${name}`);
    }
    if (!server) throw new Error("the policy server is not running");
    return createHttpJsonProvider({
      url: server.url(name),
      model: `reservations-${name}`,
      timeoutMs: 30_000,
    });
  };
  const tasks: EvalTask[] = cases.map((c) => ({
    id: c.id,
    description: c.description,
    expected: c.expected,
    run: (workspace, signal) =>
      runCase(c, workspace, signal, () => providerFor(c.policy), options.harnessVersion ?? "eval"),
  }));
  return {
    name: "reservations",
    version: RESERVATIONS_SUITE_VERSION,
    description: "equipment reservations through the executor, 17 fixed tasks",
    decision,
    tasks,
    async setup() {
      if (decision === "http-json") server = await startPolicyServer(SUITE_POLICIES);
    },
    async teardown() {
      await server?.close();
      server = undefined;
    },
  };
}

/** Thrown from the journal listener to stop the process "between" tool.started and tool.result. */
class SimulatedCrash extends Error {
  override readonly name = "SimulatedCrash";
}

async function runCase(
  c: ReservationCase,
  workspace: TaskWorkspace,
  signal: AbortSignal,
  provider: () => Provider,
  harnessVersion: string,
): Promise<TaskRun> {
  const db = ReservationDb.fixture(join(workspace.root, "inventory.sqlite"));
  try {
    const stockBefore = db.stockLevels();
    const session = {
      task: c.task,
      db,
      store: workspace.store,
      fs: workspace.fs,
      artifacts: new FileArtifactStore(workspace.artifactsDir(c.task.id)),
      workspace: { name: "eval", fingerprint: sha256Hex(`reservations/${c.id}`) },
      stockBefore,
      harnessVersion,
      signal,
    };
    const checks: Check[] = [];
    let summary: RunSummary;
    if (c.crashAfterReserveCommit) {
      checks.push(await crashAfterCommit(c, session, provider()));
      summary = await runReservationTask({ ...session, provider: provider(), mode: "resume" });
    } else {
      summary = await runReservationTask({ ...session, provider: provider() });
    }
    const records = await workspace.store.read(c.task.id);
    const effects = { ledger: db.ledger(), stockBefore, stockAfter: db.stockLevels() };
    const verdict = checkClaim(c.task, finalReplyText(records), records, effects);
    const actual = outcomeOf(summary);
    checks.push(...effectChecks(c, effects, records));
    const evidence = evidenceFrom(records, db);
    if (c.evidence) {
      checks.push({
        name: "document evidence cited with line numbers and a digest that matches the stored document",
        passed: evidence?.verified === true,
      });
    }
    return {
      actual,
      termination: terminationOf(summary),
      checks,
      effects: {
        ledger_rows: effects.ledger.length,
        receipts: effects.ledger.map((r) => r.receipt),
        stock_before: effects.stockBefore,
        stock_after: effects.stockAfter,
      },
      effectsSummary: effectsLine(effects),
      model_requests: summary.model_requests,
      tool_calls: summary.tool_calls,
      ...(evidence ? { evidence: { ...evidence, lines: evidence.lines.map((l) => ({ ...l })) } } : {}),
      details: {
        claim: verdict.claim ?? null,
        claim_consistent: verdict.consistent,
        claim_problems: verdict.problems,
      },
    };
  } finally {
    db.close();
  }
}

/** The finish status the host accepts: the verified claim, or what the engine's stop means. */
function outcomeOf(summary: RunSummary): string {
  if (summary.status === "verified") return (summary.answer ?? "").trim();
  if (summary.status === "stopped") {
    switch (summary.reason) {
      case "budget_exhausted":
        return "budget_exhausted";
      // An unsupported claim, a malformed action or a broken decision source: the policy failed.
      case "acceptance_failed":
      case "protocol_error":
      case "provider_error":
        return "policy_error";
    }
  }
  return terminationOf(summary);
}

function terminationOf(summary: RunSummary): string {
  return summary.reason ? `${summary.status}:${summary.reason}` : summary.status;
}

type SessionBase = Omit<Parameters<typeof runReservationTask>[0], "provider" | "mode" | "listener">;

/**
 * Run until reserve's tool.started is durable, then "crash" before the handler runs; perform the
 * same reservation through the tool directly, as if it had committed just before the crash.
 */
async function crashAfterCommit(
  c: ReservationCase,
  session: SessionBase,
  provider: Provider,
): Promise<Check> {
  let crashed = false;
  try {
    await runReservationTask({
      ...session,
      provider,
      listener: {
        record(record: AnyRecord) {
          if (record.type === "tool.started" && record.data.name === "reserve")
            throw new SimulatedCrash("simulated crash after reserve started");
        },
      },
    });
  } catch (error) {
    if (!(error instanceof SimulatedCrash)) throw error;
    crashed = true;
  }
  const started = (await session.store.read(c.task.id)).filter(
    (r) => r.type === "tool.started" && r.data.name === "reserve",
  );
  const args =
    started[0]?.type === "tool.started" ? reserveInput.safeParse(started[0].data.arguments) : undefined;
  if (!crashed || !args?.success) return { name: "the run crashed after reserve started", passed: false };
  const tool = createReserveTool(session.db);
  await tool.execute(
    args.data,
    createToolContext({ callId: "crash-recovery", fs: session.fs, artifacts: session.artifacts }),
  );
  return { name: "the run crashed after reserve started and its transaction committed", passed: true };
}
