import type { JsonObject } from "../shared/json.js";
import { type AgentLimits, DEFAULT_AGENT_LIMITS, effectiveAgentLimits } from "./agents/limits.js";

export type WriteFlag = "allow" | "ask" | "deny" | "propose";
export type ShellFlag = "allow" | "ask" | "deny";
export type SandboxFlag = "workspace-write" | "read-only" | "off";
export type NetworkFlag = "off" | "policy";

/** Run options as given on the command line; recorded (minus the script path) for resume. */
export interface RunFlags {
  write?: WriteFlag | undefined;
  readOnly?: boolean | undefined;
  shell?: ShellFlag | undefined;
  allow?: string[] | undefined;
  ask?: string[] | undefined;
  deny?: string[] | undefined;
  tools?: string | undefined;
  /** `--defer-tools`: when tool definitions are loaded on demand (engine/tool-offer.ts); default auto. */
  deferTools?: "auto" | "always" | "never" | undefined;
  sandbox?: SandboxFlag | undefined;
  /** `--network`: `off` (no network, the default) or `policy` (through the proxy, by `net(...)` rules). */
  network?: NetworkFlag | undefined;
  provider?: string | undefined;
  model?: string | undefined;
  baseUrl?: string | undefined;
  apiKeyEnv?: string | undefined;
  profile?: string | undefined;
  /** `--context-window`: tokens per request, beating the profile and the table (kept for resume). */
  contextWindow?: number | undefined;
  /** `--request-deadline`: longest time one model request may take, beating the profile (kept for resume). */
  requestDeadlineMs?: number | undefined;
  /** Task scope: the only files the agent may read / edit (checked at every call). */
  readPaths?: string[] | undefined;
  editPaths?: string[] | undefined;
  /** `--agents-depth`, `--agents-concurrent`, `--agents-max`: how far the session may delegate. */
  agents?: { [K in keyof AgentLimits]?: AgentLimits[K] | undefined } | undefined;
  /** `--until-accepted N`: the goal loop's attempts in all (the checks' failures go back to the model). */
  untilAccepted?: number | undefined;
  /** `--max-cost-usd X`: the session's money budget, all turns together (needs the profile's prices). */
  maxCostUsd?: number | undefined;
  /** `--no-progress K`: the goal loop ends after K attempts in a row without progress (default 2). */
  noProgress?: number | undefined;
  /**
   * The defaults in force when no config or flag decides (lowest precedence): only for what
   * the flags leave open, so the same flags make the same policy through any door.
   */
  defaults?: { write?: WriteFlag; shell?: ShellFlag };
}

const RECORDED_KEYS: (keyof RunFlags)[] = [
  "write",
  "readOnly",
  "shell",
  "allow",
  "ask",
  "deny",
  "tools",
  "deferTools",
  "sandbox",
  "network",
  "provider",
  "model",
  "baseUrl",
  "apiKeyEnv",
  "profile",
  "contextWindow",
  "requestDeadlineMs",
  "readPaths",
  "editPaths",
  "agents",
  "untilAccepted",
  "noProgress",
  "maxCostUsd",
];

/**
 * The flags to use: those given now, else those recorded when the session started. The
 * write/shell defaults (ask on a terminal, deny otherwise) sit BELOW the config files, and the
 * ones a session started with are recorded too, so resuming elsewhere rebuilds the same policy.
 */
export function effectiveFlags(
  given: RunFlags,
  recorded: JsonObject | undefined,
  interactive: boolean,
): RunFlags {
  const flags: RunFlags = {};
  for (const key of RECORDED_KEYS) {
    const value = given[key] ?? (recorded?.[key] as RunFlags[typeof key] | undefined);
    if (value !== undefined) Object.assign(flags, { [key]: value });
  }
  // Always whole once effective: a new session records its limits, so its children and its
  // resume hold to them whatever the defaults become.
  flags.agents = effectiveAgentLimits(
    given.agents,
    recorded?.agents as Partial<AgentLimits> | undefined,
    recorded === undefined,
  );
  const defaults = recorded?.defaults as { write?: WriteFlag; shell?: ShellFlag } | undefined;
  const fallback = interactive ? "ask" : "deny";
  // A session recorded with defaults keeps them all (journals from before this rule included).
  const write = defaults?.write ?? (flags.write === undefined ? fallback : undefined);
  const shell = defaults?.shell ?? (flags.shell === undefined ? fallback : undefined);
  flags.defaults = { ...(write ? { write } : {}), ...(shell ? { shell } : {}) };
  return flags;
}

export function recordableFlags(flags: RunFlags): JsonObject {
  const out: JsonObject = {};
  for (const key of RECORDED_KEYS) {
    const value = flags[key];
    if (value !== undefined) out[key] = value as JsonObject[string];
  }
  if (flags.defaults) out.defaults = { ...flags.defaults };
  return out;
}

/**
 * The flags as `harness run` takes them on its command line, each a flag with its value (if any):
 * what a printed command for a new run repeats, since a new session inherits nothing.
 */
export function flagWords(flags: RunFlags): string[][] {
  const words: string[][] = [];
  const one = (flag: string, value: string | number | undefined) => {
    if (value !== undefined) words.push([flag, String(value)]);
  };
  const many = (flag: string, values: readonly string[] | undefined) => {
    for (const value of values ?? []) words.push([flag, value]);
  };
  one("--profile", flags.profile);
  one("--provider", flags.provider);
  one("--model", flags.model);
  one("--base-url", flags.baseUrl);
  one("--api-key-env", flags.apiKeyEnv);
  one("--write", flags.write);
  if (flags.readOnly) words.push(["--read-only"]);
  one("--shell", flags.shell);
  one("--sandbox", flags.sandbox);
  one("--network", flags.network);
  one("--tools", flags.tools);
  many("--allow", flags.allow);
  many("--ask", flags.ask);
  many("--deny", flags.deny);
  many("--read-path", flags.readPaths);
  many("--edit-path", flags.editPaths);
  one("--context-window", flags.contextWindow);
  one("--request-deadline", flags.requestDeadlineMs);
  one("--until-accepted", flags.untilAccepted);
  one("--no-progress", flags.noProgress);
  // Only limits that differ from a new session's defaults: a printed command stays short.
  const agents = flags.agents ?? {};
  if (agents.depth !== undefined && agents.depth !== DEFAULT_AGENT_LIMITS.depth)
    one("--agents-depth", agents.depth);
  if (agents.concurrent !== undefined && agents.concurrent !== DEFAULT_AGENT_LIMITS.concurrent)
    one("--agents-concurrent", agents.concurrent);
  if (agents.max !== undefined && agents.max !== DEFAULT_AGENT_LIMITS.max) one("--agents-max", agents.max);
  return words;
}
