import { join } from "node:path";
import { FileArtifactStore } from "../artifacts/file-store.js";
import { Engine } from "../engine/engine.js";
import type { EngineListener, RunSummary, TurnAttachments } from "../engine/options.js";
import type { JournalStore } from "../journal/store.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import type { ModelPrices } from "../providers/config.js";
import { modelNameOf } from "../providers/provider.js";
import type { PermissionPort } from "../runtime/ports.js";
import type { UndoReport } from "../undo/apply.js";
import type { ContentSources } from "../undo/history.js";
import type { UndoTarget } from "../undo/plan.js";
import { recordedBase } from "../undo/replay.js";
import { type SessionRun, sessionEngineOptions } from "./engine-options.js";
import { type SessionRow, sessionRows } from "./listing.js";
import type { ModelCatalog, ModelListing } from "./models.js";
import { forkWithArtifacts } from "./operations/fork.js";
import { undoSession } from "./operations/undo.js";
import { keptObjects, newSessionId } from "./workspace.js";

/** One running turn of a session: awaiting it (or `done`) gives its summary. */
export interface Turn extends PromiseLike<RunSummary> {
  /** Resolves when the turn ends (the model answered, it was interrupted, or it stopped). */
  readonly done: Promise<RunSummary>;
  /** Typed while the turn runs: journaled and given to the model at the next step boundary. */
  steer(text: string): Promise<void>;
  /** Stop the turn at the next safe point; the session stays open for the next prompt. */
  interrupt(): void;
  /**
   * Kill the turn's process trees now, not at the next safe point (a lost lease, a second
   * Ctrl-C); every journal append already made is whole.
   */
  exitNow(): void;
}

/**
 * A session you can run turns in and operate on: the one handle the chat, the server, the MCP
 * server, the fleet worker, evaluations, examples and library callers use.
 */
export interface SessionHandle {
  /** The model as the footer and /model name it (the next turn's, after a switch). */
  readonly model: string;
  /** The model's prices when its profile gives them (the footer's cost). */
  readonly prices: ModelPrices | undefined;
  /** The session's id (it exists on disk once the first turn started). */
  readonly sessionId: string;
  /** Whether a turn has run (the next input is a follow-up, not the goal). */
  readonly started: boolean;
  /**
   * Run one turn: the first turn of a new session starts it with `input` as its goal, a later one
   * continues it. Events go to `listener` (the handle's own when none is given).
   */
  turn(input: string, listener?: EngineListener, attachments?: TurnAttachments): Turn;
  /** Go on with a recorded session where it stopped, with no new input. */
  resume(listener?: EngineListener): Turn;
  /** /compact: summarize the older turns now (one summary request); what happened, in words. */
  compact(listener?: EngineListener): Promise<string>;
  /**
   * `!command`: run the person's shell command between turns, through the policy, sandbox and
   * journal the model's shell calls use; its result, which is not sent to the model.
   */
  runCommand(command: string, share: boolean, listener?: EngineListener): Promise<CommandResult>;
  /** The session's journal so far (for /diff and /undo's picker). */
  records(): Promise<readonly AnyRecord[]>;
  /** Where the bytes of the session's recorded file entries are (for /diff and the picker's line counts). */
  contentSources(records: readonly AnyRecord[]): Promise<ContentSources>;
  /** The workspace's sessions with status and goal (for /sessions). */
  sessions(): Promise<readonly SessionRow[]>;
  /**
   * /sessions ID: go on in the session `given` names (an id or its unique start), after the
   * checks a resume makes (trusted journal, not running, same workspace, policy, model, tools...);
   * refused with the reason otherwise, this session kept. The id switched to.
   */
  switchTo(given: string): Promise<string>;
  /** The command that continues this session after the chat (undefined before it has records). */
  continueCommand(): string | undefined;
  /** /fork: continue in a new session holding this one's history (this one stays as it is); its id. */
  fork(): Promise<string>;
  /** /undo, /redo: put the workspace's files back to a point of the session (journaled, compare-and-swap). */
  undo(target: UndoTarget): Promise<UndoReport>;
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

/**
 * How a door opens another recorded session of its workspace (the chat's /sessions ID) as it
 * would open it itself (its recorded options, model and acceptance), and the command that
 * continues a session after it.
 */
export interface SessionOpener {
  /** The session id `given` names (an id or its unique start); a usage error otherwise. */
  resolve(given: string): Promise<string>;
  open(sessionId: string): Promise<SessionRun>;
  continueCommand(sessionId: string): string;
}

/** A `!command`'s result as journaled (content: the scrubbed output the shell tool returns). */
export type CommandResult = NonNullable<RunSummary["command"]>;

/**
 * A session on the real engine, set up as every door sets one up (the caller passes the
 * SessionRun `createSession`/`openSession` or a door built): the first turn starts a new session
 * whose goal is the first input; each later turn is a new Engine on the same session with that
 * input, so every turn passes the identity checks a resume does.
 */
export class EngineSession implements SessionHandle {
  #run: SessionRun;
  #started: boolean;
  readonly #catalog: ModelCatalog | undefined;
  readonly #opener: SessionOpener | undefined;
  /** /model switched the provider: turns from now on journal the switch if the session recorded another. */
  #switched = false;

  readonly #listener: EngineListener;
  readonly #signal: AbortSignal | undefined;

  constructor(
    run: SessionRun,
    existing: boolean,
    options: {
      catalog?: ModelCatalog;
      opener?: SessionOpener;
      listener?: EngineListener;
      /** Aborting it cancels the running turn (a library caller's signal). */
      signal?: AbortSignal;
    } = {},
  ) {
    const { catalog, opener } = options;
    this.#listener = options.listener ?? {};
    this.#signal = options.signal;
    this.#run = run;
    this.#started = existing;
    this.#catalog = catalog;
    this.#opener = opener;
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

  /** The policy of the session the chat is in now (it changes with /sessions). */
  get permissions(): PermissionPort {
    return this.#run.setup.policy.permissions;
  }

  get started(): boolean {
    return this.#started;
  }

  turn(input: string, listener: EngineListener = this.#listener, attachments?: TurnAttachments): Turn {
    const with_ = attachments !== undefined ? { attachments } : {};
    return this.#started
      ? this.start({ mode: "resume", input, ...with_ }, listener)
      : this.start({ mode: "new", goal: input, ...with_ }, listener);
  }

  /**
   * An engine run exactly as a door asked for it (a mode, a goal or input, a compaction): what
   * `harness run`'s modes need beyond turn and resume. The session counts as started after it.
   */
  start(
    request: Pick<SessionRun, "mode" | "goal" | "input" | "compactOnly" | "userCommand" | "attachments">,
    listener: EngineListener = this.#listener,
  ): Turn {
    // Only what a request names is taken (a door may pass a wider object, e.g. harness run's).
    const { mode, goal, input, compactOnly, userCommand, attachments } = request;
    const { attachments: _earlier, ...base } = this.#run;
    const run: SessionRun = {
      ...base,
      mode,
      ...(attachments !== undefined ? { attachments } : {}),
      ...(goal !== undefined ? { goal } : {}),
      ...(input !== undefined ? { input } : {}),
      ...(compactOnly !== undefined ? { compactOnly } : {}),
      ...(userCommand !== undefined ? { userCommand } : {}),
    };
    const engine = new Engine({
      ...sessionEngineOptions(run, this.#signal ?? new AbortController().signal, listener),
      // A new session records the model it starts with; a switch is journaled only on a resume.
      ...(request.mode === "new" ? {} : this.#switch()),
    });
    this.#started = true;
    return turnOf(engine);
  }

  /**
   * Go on with a recorded session where it stopped, with no new input (a worker taking over a
   * session whose worker died, `harness resume`): calls left without a result are settled first.
   */
  resume(listener: EngineListener = this.#listener): Turn {
    if (!this.#started) throw new Error("a new session starts with a turn, not a resume");
    return this.start({ mode: "resume" }, listener);
  }

  /**
   * A compaction as a turn of its own (the server's session/compact): the older turns summarized
   * now, with the caller's instructions; its summary says what was replaced.
   */
  compactTurn(instructions: string | undefined, listener: EngineListener = this.#listener): Turn {
    return this.start(
      { mode: "resume", compactOnly: instructions === undefined ? {} : { instructions } },
      listener,
    );
  }

  async compact(listener: EngineListener = this.#listener): Promise<string> {
    const { compacted } = await this.compactTurn(undefined, listener);
    return compacted
      ? `compacted: ${compacted.replaced_messages} messages replaced by a summary (about ${compacted.tokens_before} -> ${compacted.tokens_after} tokens)`
      : "nothing was compacted";
  }

  async runCommand(
    command: string,
    share: boolean,
    listener: EngineListener = this.#listener,
  ): Promise<CommandResult> {
    const summary = await this.start({ mode: "resume", userCommand: { command, share } }, listener);
    if (summary.command === undefined) throw new Error("the command was not run");
    return summary.command;
  }

  records(): Promise<readonly AnyRecord[]> {
    return this.#started ? this.#journal().read(this.sessionId) : Promise.resolve([]);
  }

  async contentSources(records: readonly AnyRecord[]): Promise<ContentSources> {
    const workspace = this.#run.workspace;
    const artifacts = new FileArtifactStore(join(workspace.sessionDir(this.sessionId), "artifacts"));
    const directories = await recordedBase(records, artifacts).then(
      (base) => base.directories,
      () => false,
    );
    return { artifacts, kept: keptObjects(workspace), root: workspace.root, mode: { directories } };
  }

  sessions(): Promise<readonly SessionRow[]> {
    return sessionRows(this.#journal());
  }

  async switchTo(given: string): Promise<string> {
    if (this.#opener === undefined) throw new Error("this chat cannot switch sessions");
    const id = await this.#opener.resolve(given);
    if (id === this.sessionId && this.#started) return id;
    const run = await this.#opener.open(id);
    // The checks the next turn's resume would make, made now: a refusal keeps this session.
    try {
      await new Engine(
        sessionEngineOptions({ ...run, mode: "resume" }, new AbortController().signal, {}),
      ).checkResume();
    } catch (error) {
      await run.setup.mcp?.close();
      await run.setup.sessionNetwork?.close();
      throw error;
    }
    const previous = this.#run;
    this.#run = run;
    this.#started = true;
    this.#switched = false;
    await previous.setup.mcp?.close();
    await previous.setup.sessionNetwork?.close();
    return id;
  }

  continueCommand(): string | undefined {
    return this.#started ? this.#opener?.continueCommand(this.sessionId) : undefined;
  }

  async fork(): Promise<string> {
    const parent = this.sessionId;
    const child = newSessionId();
    const workspace = this.#run.workspace;
    await forkWithArtifacts(workspace, parent, child, undefined);
    this.#run = { ...this.#run, sessionId: child };
    return child;
  }

  undo(target: UndoTarget): Promise<UndoReport> {
    return undoSession(this.#run.workspace, this.sessionId, target, false);
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

  /** The session's journal store (a worker's, under its lease, or the workspace's own). */
  #journal(): JournalStore {
    return this.#run.store ?? this.#run.workspace.store;
  }

  /** A resume after /model: the engine journals the switch instead of refusing the new provider. */
  #switch(): { switchModel?: true } {
    return this.#switched ? { switchModel: true } : {};
  }

  async close(): Promise<void> {
    await this.#run.setup.processes?.background?.closeSession();
    await this.#run.setup.mcp?.close();
    await this.#run.setup.sessionNetwork?.close();
  }
}

export function turnOf(engine: Engine): Turn {
  const done = engine.run();
  return {
    done,
    // Awaiting the turn itself is awaiting `done`.
    // biome-ignore lint/suspicious/noThenProperty: a turn is deliberately a thenable of its summary.
    then: (fulfilled, rejected) => done.then(fulfilled, rejected),
    steer: (text) => engine.steer(text),
    interrupt: () => engine.interrupt(),
    exitNow: () => engine.exitNow(),
  };
}
