import { z } from "zod";
import type { Limits } from "../engine/options.js";
import { MAX_CONTEXT_TOKENS } from "../providers/context-window.js";
import type { RunFlags } from "./run-flags.js";
import { UsageError } from "./usage-error.js";

/**
 * How a session is set up: the one shape every door (the command line, the server's
 * `session/start`, a fleet task, the library) turns its input into before anything is built.
 * The names are the command line's flags in camelCase; what of it a session records for resume
 * is `recordableFlags(flagsOf(config))` (run-flags.ts), produced from it by one function.
 *
 * What the config files decide (profiles, rules, hooks, MCP servers, sandbox profiles) is read
 * when the session is built, below these options: an option given here beats the files.
 */
export interface SessionConfig extends Omit<RunFlags, "defaults"> {
  /** A scripted model (offline): a JSON script, or a `.mjs` module (run as code). Not recorded. */
  script?: string | undefined;
  /** Host-side acceptance commands: `verified` only when every one exits 0. */
  accept?: string[] | undefined;
  /** How long one acceptance command may run (default 600 000 ms). */
  acceptTimeoutMs?: number | undefined;
  /** Budgets of one invocation (not recorded: a resume gives its own). */
  limits?: SessionLimits | undefined;
}

export interface SessionLimits {
  maxModelRequests?: Limits["maxModelRequests"] | undefined;
  maxToolCalls?: Limits["maxToolCalls"] | undefined;
  poolSize?: Limits["poolSize"] | undefined;
}

export const DEFAULT_ACCEPT_TIMEOUT_MS = 600_000;

const rule = z.string().min(1);
const positive = z.number().int().positive();

/** The schema of a `SessionConfig` given as data (a library caller's object, JSON): strict. */
export const sessionConfigSchema = z
  .object({
    write: z.enum(["allow", "ask", "deny", "propose"]),
    readOnly: z.boolean(),
    shell: z.enum(["allow", "ask", "deny"]),
    allow: z.array(rule),
    ask: z.array(rule),
    deny: z.array(rule),
    tools: z.string().min(1),
    deferTools: z.enum(["auto", "always", "never"]),
    sandbox: z.enum(["workspace-write", "read-only", "off"]),
    network: z.enum(["off", "policy"]),
    provider: z.string().min(1),
    model: z.string().min(1),
    baseUrl: z.string().min(1),
    apiKeyEnv: z.string().min(1),
    profile: z.string().min(1),
    contextWindow: positive.max(MAX_CONTEXT_TOKENS),
    requestDeadlineMs: positive,
    readPaths: z.array(z.string().min(1)),
    editPaths: z.array(z.string().min(1)),
    agents: z
      .object({
        depth: z.number().int().nonnegative().max(8),
        concurrent: positive.max(64),
        max: positive.max(1024),
      })
      .partial()
      .strict(),
    untilAccepted: z.number().int().min(1).max(100),
    noProgress: positive.max(100),
    maxCostUsd: z.number().positive().finite(),
    script: z.string().min(1),
    accept: z.array(z.string().min(1)),
    acceptTimeoutMs: positive,
    limits: z
      .object({
        maxModelRequests: positive,
        maxToolCalls: z.number().int().nonnegative(),
        poolSize: positive,
      })
      .partial()
      .strict(),
  })
  .partial()
  .strict();

/**
 * A `SessionConfig` from outside (unknown until parsed): a usage error naming every wrong key,
 * never a partly applied configuration.
 */
export function parseSessionConfig(value: unknown): SessionConfig {
  const parsed = sessionConfigSchema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const where = issue.path.length > 0 ? issue.path.join(".") : "config";
    return `${where}: ${issue.message}`;
  });
  throw new UsageError(`invalid session configuration: ${problems.join("; ")}`);
}

/** The options of a configuration that a session records (the rest is given again on resume). */
export function flagsOf(config: SessionConfig): RunFlags {
  const { script: _script, accept: _accept, acceptTimeoutMs: _timeout, limits: _limits, ...flags } = config;
  const out: RunFlags = {};
  for (const [key, value] of Object.entries(flags))
    if (value !== undefined) Object.assign(out, { [key]: value });
  return out;
}
