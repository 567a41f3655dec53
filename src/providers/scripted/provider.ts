import { readFile } from "node:fs/promises";
import { basename, extname } from "node:path";
import { AGENT_LABEL_RULE, isAgentLabel, MAX_AGENT_DEPTH } from "../../shared/agent-label.js";
import { errnoCode } from "../../shared/errno.js";
import { sha256Hex } from "../../shared/hash.js";
import { importFile } from "../../shared/import-file.js";
import { toWellFormed } from "../../shared/unicode.js";
import { type ModelRequest, type Provider, ProviderError, type ProviderIdentity } from "../provider.js";
import { readScriptData } from "./data-file.js";
import {
  parseScript,
  parseScriptFile,
  parseTurn,
  ScriptError,
  type ScriptedTurn,
  type ScriptFunction,
  type ScriptTree,
} from "./script.js";

/**
 * Where turns come from: a reply list (`script` undefined: the script has none for this sub-agent,
 * so every request fails), or a function asked with the sub-agent path.
 */
type TurnSource = { kind: "list"; script: ScriptTree | undefined } | { kind: "function"; fn: ScriptFunction };

/**
 * The offline model: plays a script. Turn N answers the session's Nth recorded model attempt
 * (`request.ordinal`), so a resumed session continues where it stopped. Every call's argument
 * JSON is split into several fragments so the decoder is exercised on every run. A sub-agent's
 * session gets `forAgent(label)`: the replies the script holds for that label, counted from its
 * own first request.
 */
export class ScriptedProvider implements Provider {
  readonly identity: ProviderIdentity;
  /** The sub-agent path this provider answers for: "" for the session the script was given to. */
  readonly agent: string;
  private readonly source: TurnSource;
  /** The identity of the script as loaded, which every sub-agent's identity derives from. */
  private readonly scriptIdentity: ProviderIdentity;

  constructor(source: TurnSource, identity: ProviderIdentity, agent = "", scriptIdentity = identity) {
    this.source = source;
    this.identity = identity;
    this.agent = agent;
    this.scriptIdentity = scriptIdentity;
  }

  /** Turns are checked like a script file's (external input), and defaults are filled in. */
  static fromTurns(turns: readonly unknown[], name = "inline"): ScriptedProvider {
    const parsed = turns.map((turn, i) => parseTurn(turn, `${name} reply #${i + 1}`));
    return new ScriptedProvider(
      { kind: "list", script: { replies: parsed, agents: new Map() } },
      { kind: "scripted", name, sha256: sha256Hex(JSON.stringify(turns)) },
    );
  }

  /** A whole script as a value, `{ replies, agents? }`, checked as a script file is. */
  static fromScript(script: unknown, name = "inline"): ScriptedProvider {
    return new ScriptedProvider(
      { kind: "list", script: parseScript(script, name) },
      { kind: "scripted", name, sha256: sha256Hex(JSON.stringify(script)) },
    );
  }

  static fromFunction(fn: ScriptFunction, name: string, version = "1"): ScriptedProvider {
    return new ScriptedProvider({ kind: "function", fn }, { kind: "scripted", name, version });
  }

  /**
   * A script that is data only, whatever its name: JSON replies, never imported (for a caller
   * that may not have the host run code it names; see data-file.ts for how it is read).
   */
  static async loadData(file: string): Promise<ScriptedProvider> {
    const bytes = await readScriptData(file);
    const identity: ProviderIdentity = { kind: "scripted", name: basename(file), sha256: sha256Hex(bytes) };
    return new ScriptedProvider(
      { kind: "list", script: parseScriptFile(bytes.toString("utf8"), basename(file)) },
      identity,
    );
  }

  /** Load a `.json` script or an `.mjs` module whose default export is a ScriptFunction. */
  static async load(file: string): Promise<ScriptedProvider> {
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (error) {
      const code = errnoCode(error) ?? "error";
      throw new ScriptError(`cannot read script ${basename(file)} (${code})`);
    }
    const identity: ProviderIdentity = { kind: "scripted", name: basename(file), sha256: sha256Hex(bytes) };
    const extension = extname(file);
    if (extension === ".mjs" || extension === ".js") {
      let module: { default?: unknown };
      try {
        module = (await importFile(file)) as { default?: unknown };
      } catch (error) {
        // A syntax error or a throw while the module loads: the user's script is broken, which
        // is a usage problem to report in one line, not a crash with a stack trace.
        throw new ScriptError(`${basename(file)} could not be loaded: ${describeFailure(error)}`);
      }
      if (typeof module?.default !== "function") {
        throw new ScriptError(
          `${basename(file)}: the default export must be a function (messages, step, agent) => reply`,
        );
      }
      return new ScriptedProvider({ kind: "function", fn: module.default as ScriptFunction }, identity);
    }
    return new ScriptedProvider(
      { kind: "list", script: parseScriptFile(bytes.toString("utf8"), basename(file)) },
      identity,
    );
  }

  /**
   * The provider of this session's sub-agent `label`: the same script, playing that sub-agent's
   * own replies (`agents[label]`; none there, and each of its requests fails as a fatal script
   * error naming the path), or the same function asked with the path. Its identity is the
   * script's with the name `NAME#PATH`, the same every time, so a resumed sub-agent finds it
   * unchanged. A label that is not one is the caller's bug (a TypeError).
   */
  forAgent(label: string): ScriptedProvider {
    if (!isAgentLabel(label)) {
      throw new TypeError(
        `invalid sub-agent label ${JSON.stringify(label.slice(0, 80))}: ${AGENT_LABEL_RULE}`,
      );
    }
    const path = this.agent === "" ? label : `${this.agent}/${label}`;
    if (path.split("/").length > MAX_AGENT_DEPTH) {
      throw new TypeError(`sub-agent ${path} is deeper than sub-agents go (${MAX_AGENT_DEPTH} levels)`);
    }
    const source: TurnSource =
      this.source.kind === "function"
        ? this.source
        : { kind: "list", script: this.source.script?.agents.get(label) };
    const name = typeof this.scriptIdentity.name === "string" ? this.scriptIdentity.name : "script";
    return new ScriptedProvider(
      source,
      { ...this.scriptIdentity, name: `${name}#${path}` },
      path,
      this.scriptIdentity,
    );
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<unknown> {
    if (signal.aborted) throw new ProviderError("CANCELLED", "request cancelled");
    const produced = await this.turnFor(request);
    if (isIterable(produced)) {
      yield* scriptEvents(produced);
      return;
    }
    const turn = produced;
    if ("error" in turn) {
      const retryable = turn.error.kind === "transient";
      throw new ProviderError("SCRIPT_ERROR", turn.error.message, { retryable });
    }
    if ("stream" in turn) {
      yield* turn.stream;
      return;
    }
    for (const piece of splitInto(turn.text, 2)) yield { type: "text_delta", text: piece };
    for (const call of turn.calls) {
      const fragments = splitInto(JSON.stringify(call.arguments), 3);
      yield { type: "tool_call_delta", call_id: call.id, name: call.name, arguments: fragments[0] ?? "" };
      for (const fragment of fragments.slice(1)) {
        yield { type: "tool_call_delta", call_id: call.id, arguments: fragment };
      }
    }
    yield { type: "usage", usage: { input_tokens: 0, output_tokens: 0, ...turn.usage } };
    yield { type: "end", reason: turn.calls.length > 0 ? "tool_calls" : "stop" };
  }

  private async turnFor(
    request: ModelRequest,
  ): Promise<ScriptedTurn | Iterable<unknown> | AsyncIterable<unknown>> {
    if (this.source.kind === "list") {
      const script = this.source.script;
      if (script === undefined) {
        throw scriptFailure(
          `the script has no replies for sub-agent ${this.agent} (its "agents" hold no entry on that path)`,
        );
      }
      // A reply list scripts the task; a summary asked for along the way never uses up a reply.
      if (request.purpose === "compaction") return parseTurn({ text: scriptedSummary(request) }, "summary");
      const turn = script.replies[request.ordinal];
      if (turn === undefined) {
        const whose = this.agent === "" ? "" : ` for sub-agent ${this.agent}`;
        throw new ProviderError(
          "SCRIPT_ERROR",
          `the script has no reply #${request.ordinal + 1}${whose} (it has ${script.replies.length})`,
          { retryable: false },
        );
      }
      return turn;
    }
    let value: unknown;
    try {
      value = await this.source.fn(request.messages, request.step, this.agent);
    } catch (error) {
      throw scriptFailure(`script function failed: ${describeFailure(error)}`);
    }
    const label = `script reply #${request.ordinal + 1}`;
    try {
      if (isIterable(value)) return value;
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        const what = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
        throw scriptFailure(`${label}: the script function returned ${what}, not a reply object`);
      }
      return parseTurn(value, label);
    } catch (error) {
      // A function that answers with something that is not a reply is a broken script: the
      // same call would answer the same way, so this is final, never a retried transport error.
      if (error instanceof ProviderError) throw error;
      throw scriptFailure(error instanceof ScriptError ? error.message : describeFailure(error));
    }
  }
}

/** The summary a reply list answers a compaction request with: what it replaces, in numbers. */
function scriptedSummary(request: ModelRequest): string {
  const tools = request.messages.filter((m) => m.role === "tool").length;
  return `Scripted summary at step ${request.step + 1}: ${request.messages.length} messages, ${tools} tool results.`;
}

/** A fault of the script itself: fatal, and never retried. */
function scriptFailure(message: string): ProviderError {
  return new ProviderError("SCRIPT_ERROR", toWellFormed(message), { retryable: false });
}

/** Pass a script's own events through; its iterator failing is a script fault, not the wire's. */
async function* scriptEvents(events: Iterable<unknown> | AsyncIterable<unknown>): AsyncIterable<unknown> {
  try {
    yield* events;
  } catch (error) {
    throw scriptFailure(`the script's event stream failed: ${describeFailure(error)}`);
  }
}

/** One line about a thrown value: its name and the start of its message, never a stack. */
function describeFailure(error: unknown): string {
  if (error instanceof Error) {
    const message = String(error.message).split("\n")[0]?.slice(0, 300) ?? "";
    return message === "" ? error.name : `${error.name}: ${message}`;
  }
  return `threw ${typeof error}`;
}

function isIterable(value: unknown): value is Iterable<unknown> | AsyncIterable<unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return Symbol.asyncIterator in value || Symbol.iterator in value;
}

/** Split text into up to `parts` non-empty pieces (fewer when it is short). */
function splitInto(text: string, parts: number): string[] {
  if (text.length === 0) return [];
  const count = Math.max(1, Math.min(parts, text.length));
  const size = Math.ceil(text.length / count);
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}
