import { z } from "zod";
import {
  approvalDecision,
  approvalRequested,
  journalRecord,
  PROTOCOL_VERSION,
  seq,
  sessionId,
  sessionStatus,
} from "./common.js";

/**
 * Every method a client may call, with the schema of its params and of its result: the one
 * definition of the protocol's requests. Params are strict (an unknown key is -32602, so a typo
 * never passes silently); results strip what they do not know, so an older client keeps working
 * against a newer server that adds fields.
 */

const empty = z.object({}).strict();
const emptyResult = z.object({});
const int = z.number().int();

/** The `run` command's options, `-` written `_`. */
export const runOptions = z
  .object({
    script: z.string().min(1),
    provider: z.string().min(1),
    model: z.string().min(1),
    base_url: z.string().min(1),
    profile: z.string().min(1),
    /** The run command's modes; `true`/`false` (the first protocol's) mean allow/deny. */
    write: z.union([z.boolean(), z.enum(["allow", "ask", "deny", "propose"])]),
    shell: z.union([z.boolean(), z.enum(["allow", "ask", "deny"])]),
    tools: z.string().min(1),
    /** The run command's `--allow/--ask/--deny` rules; the identity's own deny and ask rules still apply. */
    allow: z.array(z.string().min(1)),
    ask: z.array(z.string().min(1)),
    deny: z.array(z.string().min(1)),
    /** The run command's `--sandbox`, `--read-only`, `--read-path`/`--edit-path` scope and limits. */
    sandbox: z.enum(["workspace-write", "read-only", "off"]),
    /**
     * The run command's `--network`: `off` (the default) or `policy` (through the egress proxy;
     * each host decided by the `net(...)` rules, the identity's deny and ask rules included).
     */
    network: z.enum(["off", "policy"]),
    read_only: z.boolean(),
    read_path: z.array(z.string().min(1)),
    edit_path: z.array(z.string().min(1)),
    context_window: int.positive(),
    request_deadline_ms: int.positive(),
    api_key_env: z.string().min(1),
    accept: z.array(z.string().min(1)),
    propose: z.boolean(),
    max_model_requests: int.positive(),
    max_tool_calls: int.nonnegative(),
    /** The run command's goal loop: `--until-accepted N`, `--no-progress K`. */
    until_accepted: int.min(1).max(100),
    no_progress: int.positive().max(100),
    approval_timeout_ms: int.positive(),
    /** The run command's `--agents-depth`, `--agents-concurrent`, `--agents-max`: how far it may delegate. */
    agents_depth: int.nonnegative().max(8),
    agents_concurrent: int.positive().max(64),
    agents_max: int.positive().max(1024),
  })
  .partial()
  .strict();
export type RunOptions = z.infer<typeof runOptions>;

export const sessionSummary = z.object({
  session: sessionId,
  workspace: z.string(),
  identity: z.string(),
  status: sessionStatus,
  goal: z.string().optional(),
  last_seq: int.nonnegative(),
  started_at: z.string().optional(),
  /** How its latest turn ended, in one word (verified, unverified, a stop's reason): absent while none has ended. */
  outcome: z.string().optional(),
  /** A process other than this server holds its journal's writer lock (a `run`, `chat` or worker): it may grow, and is not continued here until that ends. */
  running_elsewhere: z.boolean().optional(),
});
export type SessionSummary = z.infer<typeof sessionSummary>;

export const METHODS = {
  initialize: {
    params: z
      .object({
        client: z.object({ name: z.string(), version: z.string() }).strict().optional(),
        protocol_version: z.literal(PROTOCOL_VERSION).optional(),
      })
      .strict(),
    result: z.object({
      protocol_version: z.literal(PROTOCOL_VERSION),
      server: z.object({ name: z.literal("harness"), version: z.string() }),
      identity: z.string(),
      capabilities: z.object({ compact: z.boolean(), http: z.boolean() }),
    }),
  },
  "session/start": {
    params: z
      .object({
        workspace: z.string().min(1),
        goal: z.string().optional(),
        session: sessionId.optional(),
        options: runOptions.optional(),
      })
      .strict(),
    result: z.object({ session: sessionId, status: sessionStatus }),
  },
  "session/list": {
    params: z.object({ workspace: z.string().min(1).optional() }).strict(),
    result: z.object({
      sessions: z.array(sessionSummary),
      /** The workspaces listed (where a new session may be started), when the server serves some. */
      workspaces: z.array(z.string()).optional(),
    }),
  },
  "session/read": {
    params: z
      .object({ session: sessionId, from_seq: seq.optional(), limit: int.positive().optional() })
      .strict(),
    result: z.object({
      session: sessionId,
      records: z.array(journalRecord),
      head: z.object({ seq: int.nonnegative(), hash: z.string() }).nullable(),
    }),
  },
  "session/verify": {
    params: z.object({ session: sessionId }).strict(),
    result: z.object({
      session: sessionId,
      ok: z.boolean(),
      records: int.nonnegative(),
      head_hash: z.string().nullable(),
      problems: z.array(z.string()),
    }),
  },
  "session/subscribe": {
    params: z.object({ session: sessionId, from_seq: seq.optional() }).strict(),
    result: emptyResult,
  },
  "session/unsubscribe": {
    params: z.object({ session: sessionId }).strict(),
    result: emptyResult,
  },
  "turn/start": {
    params: z.object({ session: sessionId, input: z.string() }).strict(),
    result: z.object({ session: sessionId, turn: int.positive() }),
  },
  "turn/steer": {
    params: z.object({ session: sessionId, input: z.string() }).strict(),
    result: emptyResult,
  },
  "turn/interrupt": {
    params: z.object({ session: sessionId }).strict(),
    result: emptyResult,
  },
  "approval/list": {
    params: z.object({ session: sessionId.optional() }).strict(),
    result: z.object({ approvals: z.array(approvalRequested) }),
  },
  "approval/respond": {
    params: z.object({ approval_id: z.string().min(1), decision: approvalDecision }).strict(),
    result: emptyResult,
  },
  "session/fork": {
    params: z.object({ session: sessionId, at_seq: int.nonnegative().optional() }).strict(),
    result: z.object({ session: sessionId }),
  },
  "session/compact": {
    params: z.object({ session: sessionId, instructions: z.string().optional() }).strict(),
    result: z.object({ summary: z.string() }),
  },
  shutdown: {
    params: empty,
    result: emptyResult,
  },
} as const;

export type MethodName = keyof typeof METHODS;
/** What a caller passes (optional keys may be left out). */
export type ParamsOf<M extends MethodName> = z.input<(typeof METHODS)[M]["params"]>;
/** What a handler receives after parsing. */
export type ParsedParamsOf<M extends MethodName> = z.output<(typeof METHODS)[M]["params"]>;
export type ResultOf<M extends MethodName> = z.output<(typeof METHODS)[M]["result"]>;

export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];

export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(METHODS, name);
}
