import { Engine } from "../../engine/engine.js";
import type { EngineListener, RunSummary } from "../../engine/options.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import { forkWithArtifacts } from "../commands/fork.js";
import { undoSession, undoSummary } from "../commands/undo.js";
import { type SessionRun, sessionEngineOptions } from "../session-runner.js";
import { newSessionId } from "../workspace.js";

/** One running turn of the chat's session. */
export interface Turn {
  /** Resolves when the turn ends (the model answered, it was interrupted, or it stopped). */
  readonly done: Promise<RunSummary>;
  /** Typed while the turn runs: journaled and given to the model at the next step boundary. */
  steer(text: string): Promise<void>;
  /** Stop the turn at the next safe point; the session stays open for the next prompt. */
  interrupt(): void;
}

/** The session a chat talks to: turn after turn on one journal. */
export interface ChatSession {
  /** The model as the footer and /model name it. */
  readonly model: string;
  /** The session's id (it exists on disk once the first turn started). */
  readonly sessionId: string;
  /** Whether a turn has run (the next input is a follow-up, not the goal). */
  readonly started: boolean;
  start(input: string, listener: EngineListener): Turn;
  /** /compact: summarize the older turns now (one summary request); what happened, in words. */
  compact(listener: EngineListener): Promise<string>;
  /** The session's journal so far (for /diff). */
  records(): Promise<readonly AnyRecord[]>;
  /** Every session id in the workspace (for /sessions). */
  sessions(): Promise<readonly string[]>;
  /** /fork: continue in a new session holding this one's history (this one stays as it is); its id. */
  fork(): Promise<string>;
  /** /undo: put the workspace's files back as they were before the last turn; what happened, in words. */
  undo(): Promise<string>;
  /** End the session's resources (MCP servers). */
  close(): Promise<void>;
}

/**
 * The chat's session on the real engine, set up as `harness run` sets one up (the caller passes
 * the same SessionRun): the first turn starts a new session whose goal is the first input; each
 * later turn is a new Engine on the same session with that input, so every turn passes the
 * identity checks a resume does.
 */
export class EngineChatSession implements ChatSession {
  #run: Omit<SessionRun, "json" | "events">;
  readonly model: string;
  #started: boolean;

  constructor(run: Omit<SessionRun, "json" | "events">, model: string, existing: boolean) {
    this.#run = run;
    this.model = model;
    this.#started = existing;
  }

  get sessionId(): string {
    return this.#run.sessionId;
  }

  get started(): boolean {
    return this.#started;
  }

  start(input: string, listener: EngineListener): Turn {
    const first = !this.#started;
    const options = sessionEngineOptions(
      first ? { ...this.#run, mode: "new", goal: input } : { ...this.#run, mode: "resume" },
      new AbortController().signal,
      listener,
    );
    const engine = new Engine(first ? options : { ...options, input });
    this.#started = true;
    return {
      done: engine.run(),
      steer: (text) => engine.steer(text),
      interrupt: () => engine.interrupt(),
    };
  }

  async compact(listener: EngineListener): Promise<string> {
    const controller = new AbortController();
    const engine = new Engine(
      sessionEngineOptions({ ...this.#run, mode: "resume", compactOnly: {} }, controller.signal, listener),
    );
    const summary = await engine.run();
    const compacted = summary.compacted;
    return compacted
      ? `compacted: ${compacted.replaced_messages} messages replaced by a summary (about ${compacted.tokens_before} -> ${compacted.tokens_after} tokens)`
      : "nothing was compacted";
  }

  records(): Promise<readonly AnyRecord[]> {
    return this.#started ? this.#run.workspace.backend.read(this.sessionId) : Promise.resolve([]);
  }

  sessions(): Promise<readonly string[]> {
    return this.#run.workspace.backend.list();
  }

  async fork(): Promise<string> {
    const parent = this.sessionId;
    const child = newSessionId();
    const workspace = this.#run.workspace;
    await forkWithArtifacts(workspace, parent, child, undefined);
    this.#run = { ...this.#run, sessionId: child };
    return child;
  }

  async undo(): Promise<string> {
    const report = await undoSession(this.#run.workspace, this.sessionId, { kind: "last-turn" }, false);
    const conflicts = report.outcomes.flatMap((o) => (o.outcome === "conflict" ? [o.path] : []));
    return conflicts.length > 0 ? `${undoSummary(report)}: ${conflicts.join(", ")}` : undoSummary(report);
  }

  async close(): Promise<void> {
    await this.#run.setup.mcp?.close();
  }
}
