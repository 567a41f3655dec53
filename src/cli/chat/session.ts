import { Engine } from "../../engine/engine.js";
import type { EngineListener, RunSummary } from "../../engine/options.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import type { ModelPrices } from "../../providers/config.js";
import { modelNameOf } from "../../providers/provider.js";
import { forkWithArtifacts } from "../commands/fork.js";
import { undoSession, undoSummary } from "../commands/undo.js";
import { type SessionRun, sessionEngineOptions } from "../session-runner.js";
import { newSessionId } from "../workspace.js";
import type { ModelCatalog, ProfileRow } from "./models.js";

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
  /** The model as the footer and /model name it (the next turn's, after a switch). */
  readonly model: string;
  /** The model's prices when its profile gives them (the footer's cost). */
  readonly prices: ModelPrices | undefined;
  /** The session's id (it exists on disk once the first turn started). */
  readonly sessionId: string;
  /** Whether a turn has run (the next input is a follow-up, not the goal). */
  readonly started: boolean;
  start(input: string, listener: EngineListener): Turn;
  /** /compact: summarize the older turns now (one summary request); what happened, in words. */
  compact(listener: EngineListener): Promise<string>;
  /**
   * `!command`: run the person's shell command between turns, through the policy, sandbox and
   * journal the model's shell calls use; its result, which is not sent to the model.
   */
  runCommand(command: string, share: boolean, listener: EngineListener): Promise<CommandResult>;
  /** The session's journal so far (for /diff). */
  records(): Promise<readonly AnyRecord[]>;
  /** Every session id in the workspace (for /sessions). */
  sessions(): Promise<readonly string[]>;
  /** /fork: continue in a new session holding this one's history (this one stays as it is); its id. */
  fork(): Promise<string>;
  /** /undo: put the workspace's files back as they were before the last turn; what happened, in words. */
  undo(): Promise<string>;
  /** /model: the configured profiles, the one in use, and what its provider offers. */
  models(): Promise<ModelListing>;
  /**
   * /model NAME: the next turn talks to NAME (a profile, or a model id of the profile in use);
   * the switch is journaled (`model.switched`) when that turn starts. What it switched to.
   */
  switchModel(name: string): Promise<{ model: string; profile?: string; notices: string[] }>;
  /** End the session's resources (MCP servers). */
  close(): Promise<void>;
}

/** A `!command`'s result as journaled (content: the scrubbed output the shell tool returns). */
export type CommandResult = NonNullable<RunSummary["command"]>;

export interface ModelListing {
  model: string;
  /** The profile in use, when the model came from one. */
  profile?: string;
  profiles: ProfileRow[];
  /** What the provider in use offers (what `/model ID` is checked against), or why that could not be listed. */
  offered?: { models: string[] } | { error: string };
}

/**
 * The chat's session on the real engine, set up as `harness run` sets one up (the caller passes
 * the same SessionRun): the first turn starts a new session whose goal is the first input; each
 * later turn is a new Engine on the same session with that input, so every turn passes the
 * identity checks a resume does.
 */
export class EngineChatSession implements ChatSession {
  #run: Omit<SessionRun, "json" | "events">;
  #started: boolean;
  readonly #catalog: ModelCatalog | undefined;
  /** /model switched the provider: turns from now on journal the switch if the session recorded another. */
  #switched = false;

  constructor(run: Omit<SessionRun, "json" | "events">, existing: boolean, catalog?: ModelCatalog) {
    this.#run = run;
    this.#started = existing;
    this.#catalog = catalog;
  }

  get model(): string {
    return modelNameOf(this.#run.setup.provider.identity);
  }

  get prices(): ModelPrices | undefined {
    return this.#run.setup.prices;
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
    const engine = new Engine(first ? options : { ...options, input, ...this.#switch() });
    this.#started = true;
    return {
      done: engine.run(),
      steer: (text) => engine.steer(text),
      interrupt: () => engine.interrupt(),
    };
  }

  async compact(listener: EngineListener): Promise<string> {
    const controller = new AbortController();
    const engine = new Engine({
      ...sessionEngineOptions({ ...this.#run, mode: "resume", compactOnly: {} }, controller.signal, listener),
      ...this.#switch(),
    });
    const summary = await engine.run();
    const compacted = summary.compacted;
    return compacted
      ? `compacted: ${compacted.replaced_messages} messages replaced by a summary (about ${compacted.tokens_before} -> ${compacted.tokens_after} tokens)`
      : "nothing was compacted";
  }

  async runCommand(command: string, share: boolean, listener: EngineListener): Promise<CommandResult> {
    const engine = new Engine({
      ...sessionEngineOptions(
        { ...this.#run, mode: "resume", userCommand: { command, share } },
        new AbortController().signal,
        listener,
      ),
      ...this.#switch(),
    });
    const summary = await engine.run();
    if (summary.command === undefined) throw new Error("the command was not run");
    return summary.command;
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

  async models(): Promise<ModelListing> {
    const profile = this.#run.setup.flags?.profile;
    const listing: ModelListing = {
      model: this.model,
      ...(profile !== undefined ? { profile } : {}),
      profiles: this.#catalog?.profiles() ?? [],
    };
    const offered = await this.#catalog?.offered(this.#run.setup.flags ?? {}).then(
      (models) => (models === undefined ? undefined : { models }),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    );
    if (offered !== undefined) listing.offered = offered;
    return listing;
  }

  async switchModel(name: string): Promise<{ model: string; profile?: string; notices: string[] }> {
    if (this.#catalog === undefined) throw new Error("this chat cannot switch models");
    const choice = await this.#catalog.choose(name, this.#run.setup.flags ?? {});
    const { providerAdvice: _advice, prices: _prices, ...setup } = this.#run.setup;
    this.#run = {
      ...this.#run,
      setup: {
        ...setup,
        provider: choice.provider,
        flags: choice.flags,
        ...(choice.advice ? { providerAdvice: choice.advice } : {}),
        ...(choice.prices ? { prices: choice.prices } : {}),
      },
      limits: {
        ...this.#run.limits,
        contextWindowTokens: choice.context.window,
        replyReserveTokens: choice.context.reserve,
      },
    };
    this.#switched = true;
    return {
      model: this.model,
      ...(choice.flags.profile !== undefined ? { profile: choice.flags.profile } : {}),
      notices: choice.notices,
    };
  }

  /** A resume after /model: the engine journals the switch instead of refusing the new provider. */
  #switch(): { switchModel?: true } {
    return this.#switched ? { switchModel: true } : {};
  }

  async close(): Promise<void> {
    await this.#run.setup.mcp?.close();
  }
}
