import { z } from "zod";
import { IMAGE_MEDIA_TYPES, TOOL_STATUSES } from "../protocol/types.js";
import { jsonObjectSchema } from "../shared/json.js";
import { lazyRecord } from "../shared/lazy-record.js";
import { changeSetSchema, entrySchema, manifestPathSchema } from "../workspace/manifest.js";

/**
 * The journal's event vocabulary: every event type and the shape of its data, in one place.
 * Records read back from disk are external input and are checked against these schemas.
 */
export const JOURNAL_FORMAT_VERSION = 1;

const jsonObject = jsonObjectSchema;
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const usage = z.object({
  input_tokens: z.number().optional(),
  output_tokens: z.number().optional(),
  reasoning_tokens: z.number().optional(),
  cached_tokens: z.number().optional(),
  // Absent in journals written before cache writes were recorded.
  cache_write_tokens: z.number().optional(),
});
const call = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  arguments: jsonObject,
  /** Arguments the decoder refused (a limit, or not recordable): the call never runs. */
  refused: z.object({ reason: z.string(), characters: z.number().int(), head: z.string() }).optional(),
});
const reasoning = z.object({ text: z.string(), signature: z.string().optional() });
const toolStatus = z.enum(TOOL_STATUSES);
const evidence = z.object({
  text: z.string(),
  calls: z.array(z.object({ id: z.string(), name: z.string().optional(), arguments: z.string() })),
  stop_reason: z.string().optional(),
  events: z.number().int(),
});
/** What a model request is estimated (reserved, refused) or reported (settled) to spend on a quota. */
const quotaAmount = {
  usd: z.number().nonnegative(),
  tokens: z.number().int().nonnegative(),
  requests: z.number().int().nonnegative(),
};
/** What a quota has left of each limit it has (negative when a settled reply cost more than held). */
const quotaLeft = z.object({
  usd: z.number().optional(),
  tokens: z.number().optional(),
  requests: z.number().optional(),
});
/** A model request that failed; a retryable one also says when the next attempt starts. */
const modelFailure = z.object({
  step: z.number().int(),
  attempt: z.number().int(),
  code: z.string(),
  message: z.string(),
  status: z.number().int().optional(),
  request_id: z.string().optional(),
  evidence: evidence.optional(),
});
const artifact = z.object({ id: z.string(), sha256: hex64, bytes: z.number().int() });
/** An image as messages carry it (protocol `ImageRef`): its bytes are the artifact `artifact`. */
export const imageRef = z.object({
  artifact: z.string(),
  sha256: hex64,
  media_type: z.enum(IMAGE_MEDIA_TYPES),
  bytes: z.number().int().nonnegative(),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
});
/** What a process ran under (never environment values: only the names of the variables passed). */
const processFacts = {
  purpose: z.enum(["shell", "acceptance", "hook", "mcp_server", "workspace"]).optional(),
  sandbox_profile: z.enum(["workspace-write", "read-only", "none"]).optional(),
  env_names: z.array(z.string()).optional(),
};

/** How a child session ended, as its parent records it. */
export const AGENT_OUTCOMES = [
  "verified",
  "unverified",
  "failed",
  "budget_exhausted",
  "cancelled",
  "review_required",
] as const;
/** What a child may spend (reserved from its parent) or spent. */
const agentBudget = z.object({
  model_requests: z.number().int().nonnegative(),
  tool_calls: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative().optional(),
  cost_usd: z.number().nonnegative().optional(),
  wall_ms: z.number().int().nonnegative().optional(),
});
const agentUsage = z.object({
  model_requests: z.number().int().nonnegative(),
  tool_calls: z.number().int().nonnegative(),
  input_tokens: z.number().nonnegative(),
  output_tokens: z.number().nonnegative(),
  cost_usd: z.number().nonnegative().optional(),
});
/** One file a child changed: the version its base had and the one it made (null: absent). */
const agentChange = z.object({
  path: manifestPathSchema,
  base_version: z.string().nullable(),
  new_version: z.string().nullable(),
  added: z.number().int().nonnegative(),
  removed: z.number().int().nonnegative(),
  /** Written into this workspace (merge apply), or only proposed. */
  applied: z.boolean().optional(),
});

/**
 * Each event type's schema, built the first time the type is read, appended or looked up (a run
 * uses a few of the types; building all of them cost every process start). Listing the types
 * builds none.
 */
const EVENT_SCHEMA_BUILDERS = {
  "session.started": () =>
    z.object({
      format_version: z.number().int(),
      session_id: z.string(),
      harness_version: z.string(),
      workspace: z.object({ name: z.string(), fingerprint: hex64 }),
      goal: z.string(),
      policy: jsonObject,
      policy_digest: hex64,
      provider: jsonObject,
      system_prompt_digest: hex64,
      /** `digest`: each tool's own (spec, version, effect), absent in sessions recorded before it was. */
      tools: z.array(
        z.object({ name: z.string(), version: z.string(), effect: z.string(), digest: hex64.optional() }),
      ),
      tools_digest: hex64,
      /**
       * Tools a source listed at the start but that are not offered, with why (as in tools.changed;
       * `tool` "*" for a server whose whole listing was refused). Absent when none, and in journals
       * written before.
       */
      unavailable: z.array(z.object({ server: z.string(), tool: z.string(), reason: z.string() })).optional(),
      acceptance: z.array(z.string()).optional(),
      /** How the run was set up (CLI flags without secrets or host paths), so resume can rebuild it. */
      options: jsonObject.optional(),
      /** Fingerprint of the journal key that authenticates this session (never the key). */
      key_id: z.string().optional(),
      /** The environment stated to the model (absent in sessions recorded before it was). */
      environment: z
        .object({
          os: z.string(),
          shell_program: z.string(),
          sandbox: z.enum(["workspace-write", "read-only", "none"]),
          write: z.enum(["allow", "ask", "deny", "propose"]),
          shell: z.enum(["allow", "ask", "deny"]),
          read_only: z.boolean(),
          /**
           * The task frame stated with it: the acceptance commands, the task scope and the
           * permission rules (absent in sessions recorded before the model was told them).
           */
          task: z
            .object({
              acceptance: z.array(z.string()),
              scope: z.object({ read: z.array(z.string()), edit: z.array(z.string()) }).optional(),
              rules: z.array(z.string()),
            })
            .optional(),
        })
        .optional(),
    }),
  /**
   * The tools offered to the model changed at a step boundary (`refresh`: a server announced a
   * new list) or were accepted as changed on resume (`resume`): the whole new surface, its digest,
   * and what was added, removed or changed since `previous_digest`.
   */
  "tools.changed": () =>
    z.object({
      step: z.number().int(),
      reason: z.enum(["refresh", "resume"]),
      previous_digest: hex64,
      tools_digest: hex64,
      tools: z.array(z.object({ name: z.string(), version: z.string(), effect: z.string(), digest: hex64 })),
      added: z.array(z.string()),
      removed: z.array(z.string()),
      changed: z.array(z.string()),
      /**
       * Tools a source listed but that are not offered, with why (an MCP tool whose schema does not
       * compile); a removed name not here was no longer listed. Absent in journals written before.
       */
      unavailable: z.array(z.object({ server: z.string(), tool: z.string(), reason: z.string() })).optional(),
    }),
  /**
   * Deferred tools whose definitions were loaded (`tool_search` found them): offered to the model
   * from the next request, appended after what was offered before, in this order. `digests[i]` is
   * the digest of `names[i]`'s definition as loaded (as `tools.changed` lists it): a later surface
   * with another digest makes the loaded definition stale (TOOL_SCHEMA_CHANGED until loaded again).
   * `call_id`: the `tool_search` call that loaded them.
   */
  "tools.loaded": () =>
    z.object({
      names: z.array(z.string()).min(1),
      /** One per name, in the same order (the engine writes them together). */
      digests: z.array(hex64),
      call_id: z.string().optional(),
    }),
  /**
   * Project instructions (AGENTS.md) as read: `start` (the user's and the workspace root's, pinned
   * in the system message; part of the session identity) or `nested` (a directory's, read when a
   * call first touched a file under it, with every directory looked at in `checked`).
   */
  "instructions.loaded": () =>
    z.object({
      trigger: z.enum(["start", "nested"]),
      files: z.array(
        z.object({
          source: z.enum(["user", "workspace", "nested"]),
          /** Workspace-relative, or the user's file with the home directory as `~`. */
          path: z.string(),
          /** SHA-256 of the whole file. */
          sha256: hex64,
          bytes: z.number().int(),
          truncated: z.boolean(),
          /** What the model is sent (the file, cut at the size limit with a marker). */
          text: z.string(),
          /**
           * True when the file did not fit the session's budget for pinned instructions: the model
           * was sent only its path and digest (`text` is that notice) and may read it itself.
           */
          listed: z.boolean().optional(),
        }),
      ),
      checked: z.array(z.string()).optional(),
    }),
  "session.resumed": () => z.object({ pid: z.number().int() }),
  /**
   * A skill the model activated with the `skill` tool (after its result): its SKILL.md as sent
   * (`text`), the digest of its whole folder as approved, and its `allowed-tools` rules, which
   * narrow every later call of the turn (they never grant). The text is pinned again after a
   * compaction while the skill is active (until the turn ends).
   */
  "skill.activated": () =>
    z.object({
      name: z.string().min(1),
      digest: hex64,
      source: z.string(),
      call_id: z.string(),
      allowed_tools: z.array(z.string()).optional(),
      text: z.string(),
    }),
  /**
   * The next `user.input` is a command template (`/NAME args`) expanded: its name, where it
   * came from and the digest of the template file; the expanded text is that input.
   */
  "command.expanded": () =>
    z.object({
      name: z.string().min(1),
      digest: hex64,
      source: z.string(),
    }),
  /**
   * A turn's input: the goal starts turn 1; each later turn starts with the user's next prompt.
   * `turn` is absent in sessions recorded before sessions had turns (then it is the count so far).
   */
  "user.input": () =>
    z.object({
      text: z.string(),
      turn: z.number().int().positive().optional(),
      /** Images attached to the input (`run --image`, the chat's /image): session artifacts by digest. */
      images: z.array(imageRef).optional(),
    }),
  "model.started": () =>
    z.object({
      step: z.number().int(),
      attempt: z.number().int(),
      tools_digest: hex64,
      /**
       * The request's size before it was sent (absent in journals written before estimates):
       * `basis_tokens` is UTF-8 bytes / 4, `estimated_input_tokens` that basis calibrated by the
       * provider's reports for earlier requests; the window and reply reserve it was checked against.
       */
      basis_tokens: z.number().int().nonnegative().optional(),
      estimated_input_tokens: z.number().int().nonnegative().optional(),
      context_window: z.number().int().positive().optional(),
      reply_reserve: z.number().int().nonnegative().optional(),
      /** Absent for the ordinary requests; "compaction" for one asking for a summary (no tools). */
      purpose: z.literal("compaction").optional(),
      /** What `harness compact --instructions` added to the summary request's ask, verbatim. */
      instructions: z.string().optional(),
    }),
  /**
   * A money budget (`--max-cost-usd`) before model request `step`/`attempt` is sent: its cost
   * projected from the token estimate and the profile's prices (input, and the reply reserve as
   * output), and what was left of the budget before it. Only journaled when the request fits.
   */
  "budget.reserved": () =>
    z.object({
      step: z.number().int(),
      attempt: z.number().int(),
      estimate_usd: z.number().nonnegative(),
      left_usd: z.number(),
    }),
  /** That request's cost from the provider-reported usage (0 when none was reported), and what is left after it. */
  "budget.settled": () =>
    z.object({
      step: z.number().int(),
      attempt: z.number().int(),
      cost_usd: z.number().nonnegative(),
      left_usd: z.number(),
    }),
  /**
   * A quota shared with other sessions (`--quota NAME` on a worker: `queue:NAME`; a server
   * identity's: `identity:NAME`) held model request `step`/`attempt`'s estimate, journaled before
   * the request is sent. `left`: what the quota had left after holding it, per limit it has (absent
   * when the store did not say).
   */
  "quota.reserved": () =>
    z.object({
      quota: z.string(),
      step: z.number().int(),
      attempt: z.number().int(),
      ...quotaAmount,
      left: quotaLeft.optional(),
    }),
  /** That request settled on the quota with what the provider reported; `left` after it. */
  "quota.settled": () =>
    z.object({
      quota: z.string(),
      step: z.number().int(),
      attempt: z.number().int(),
      ...quotaAmount,
      left: quotaLeft.optional(),
    }),
  /** The quota refused the request's estimate (`why`): it was not sent, and `run.stopped` follows. */
  "quota.refused": () =>
    z.object({
      quota: z.string(),
      step: z.number().int(),
      attempt: z.number().int(),
      ...quotaAmount,
      why: z.string(),
      left: quotaLeft.optional(),
    }),
  "model.retryable_error": () => modelFailure.extend({ retry_in_ms: z.number().int() }),
  "model.failed": () => modelFailure,
  "model.protocol_error": () =>
    z.object({
      step: z.number().int(),
      attempt: z.number().int(),
      error: z.string(),
      evidence,
    }),
  "model.reply": () =>
    z.object({
      step: z.number().int(),
      text: z.string(),
      calls: z.array(call),
      stop_reason: z.enum(["stop", "tool_calls"]),
      usage: usage.optional(),
      reasoning: z.array(reasoning).optional(),
    }),
  "approval.requested": () =>
    z.object({
      call_id: z.string(),
      name: z.string(),
      call_hash: hex64,
      effect: z.string(),
      /** Why a person is asked, when untrusted content seen before the call raised the question. */
      reason: z.string().optional(),
    }),
  "approval.decided": () =>
    z.object({
      call_id: z.string(),
      call_hash: hex64,
      decision: z.enum(["allow", "deny"]),
      scope: z.enum(["once", "session"]),
      by: z.string(),
      reason: z.string().optional(),
      /**
       * A session approval of a command prefix: the rule pattern it adds (`npm test*`), each simple
       * command of a later line matched by it separately; absent, exactly the call's subject.
       */
      pattern: z.string().optional(),
    }),
  "hook.decided": () =>
    z.object({
      call_id: z.string(),
      point: z.string(),
      hook: z.string(),
      kind: z.enum(["notify", "admit", "wrap"]),
      decision: z.enum(["allow", "deny", "observed", "error"]),
      reason: z.string().optional(),
      duration_ms: z.number(),
    }),
  "tool.started": () =>
    z.object({
      call_id: z.string(),
      name: z.string(),
      arguments: jsonObject,
      arguments_hash: hex64,
      tool_version: z.string(),
      schema_digest: hex64,
      effect: z.string(),
      batch: z.number().int(),
      permission: jsonObject.optional(),
      /** A call a program made inside another call (`batch`): that call's id. Absent for the model's own calls. */
      parent_call_id: z.string().optional(),
    }),
  "process.spawned": () =>
    z.object({
      call_id: z.string(),
      pid: z.number().int(),
      pgid: z.number().int(),
      boot_id: z.string(),
      start_ticks: z.number().int(),
      sandboxed: z.boolean(),
      ...processFacts,
    }),
  /**
   * A background process (`shell` with `background: true`) started by call `call_id`: its id, what
   * it runs, how long it may live (`keep`: until the turn's end or the session's; `ttl_ms`) and
   * its process group, so a resume after a crash kills what is left and reports it lost.
   */
  "process.started": () =>
    z.object({
      process_id: z.string(),
      call_id: z.string(),
      command: z.string(),
      keep: z.enum(["turn", "session"]),
      ttl_ms: z.number().int().positive().optional(),
      pty: z.boolean(),
      pid: z.number().int(),
      pgid: z.number().int(),
      boot_id: z.string(),
      start_ticks: z.number().int(),
      sandboxed: z.boolean(),
      ...processFacts,
    }),
  /** A background process met its readiness condition (`by`: none, a port, a log line). */
  "process.ready": () =>
    z.object({
      process_id: z.string(),
      by: z.enum(["none", "port", "log"]),
      after_ms: z.number().int().nonnegative(),
    }),
  /**
   * A background process and its tree were stopped (or it exited): how it ended, why, how many
   * processes were killed and how many were still found afterwards (`survivors`, 0 unless the
   * kernel could not remove one), and where its full output is.
   */
  "process.stopped": () =>
    z.object({
      process_id: z.string(),
      exit: z.number().int().nullable(),
      signal: z.string().nullable(),
      survivors: z.number().int().nonnegative(),
      killed: z.number().int().nonnegative(),
      reason: z.enum(["exited", "stopped", "ttl", "turn_end", "interrupt", "session_end", "not_ready"]),
      output_bytes: z.number().int().nonnegative(),
      stdout: artifact.nullable().optional(),
      stderr: artifact.nullable().optional(),
    }),
  /**
   * A background process an earlier harness process started and never recorded as stopped (it
   * crashed or was killed): whatever was left of it was killed (`killed`), and the model is told.
   */
  "process.lost": () => z.object({ process_id: z.string(), killed: z.number().int().nonnegative() }),
  /**
   * One connection a process of call `call_id` made (or tried) through its egress proxy: the host
   * and port it asked for, what decided (`deny`: a rule or an internal address refused it;
   * `error`: allowed but the upstream failed), the deciding rule, the bytes each way and how long
   * it lasted. Never the content. Recorded while the call runs, before its result. `hook`: the
   * command hook (by name) that made it while running for call `call_id`, absent for the call's
   * own processes.
   */
  "net.connection": () =>
    z.object({
      call_id: z.string(),
      hook: z.string().optional(),
      host: z.string(),
      port: z.number().int(),
      decision: z.enum(["allow", "deny", "error"]),
      rule: z.string().optional(),
      reason: z.string().optional(),
      address: z.string().optional(),
      bytes_up: z.number().int(),
      bytes_down: z.number().int(),
      ms: z.number().int(),
    }),
  /**
   * The egress proxy put the real value of credential `name` into a request of call `call_id` to
   * `host` (a host the user config binds it to), in place of the sandbox's placeholder. The name
   * only: never the value, never the header. `hook`: the command hook that sent the request.
   */
  "credential.used": () =>
    z.object({
      call_id: z.string(),
      hook: z.string().optional(),
      name: z.string(),
      host: z.string(),
    }),
  "tool.retrying": () =>
    z.object({
      call_id: z.string(),
      attempt: z.number().int(),
      error_type: z.string(),
      message: z.string(),
      retry_in_ms: z.number().int(),
    }),
  "tool.result": () =>
    z.object({
      call_id: z.string(),
      name: z.string(),
      status: toolStatus,
      error_type: z.string().optional(),
      summary: z.string(),
      content: z.string(),
      hint: z.string().optional(),
      data: jsonObject.optional(),
      retryable: z.boolean().optional(),
      requires_new_observation: z.boolean().optional(),
      operation_applied: z.union([z.boolean(), z.literal("unknown")]).optional(),
      artifact: artifact.optional(),
      duration_ms: z.number(),
      trace: jsonObject.optional(),
      /** As in `tool.started`: the call whose program made this one. */
      parent_call_id: z.string().optional(),
      /**
       * The content came from outside the user's trust: its provenance (a URL, an MCP server).
       * The model reads it labelled as data; the turn's later egress asks a person.
       */
      untrusted: z.string().optional(),
    }),
  "proposal.recorded": () =>
    z.object({
      proposal_id: z.string(),
      call_id: z.string(),
      path: z.string(),
      /** Version of the file the proposal is based on; null when it proposes a new file. */
      base_version: hex64.nullable(),
      content: z.string(),
      content_sha256: hex64,
      diff: z.string(),
      /**
       * The proposal deletes the file (a sub-agent's deletion): `content` is empty and
       * `content_sha256` repeats `base_version`, so a reader that does not know this field finds
       * the digest does not match the content and writes nothing.
       */
      deleted: z.literal(true).optional(),
      /**
       * The proposed content is this artifact of the session (a sub-agent's binary or large file),
       * not `content`, which is empty: the journal holds only its digest (`content_sha256`).
       */
      content_artifact: hex64.optional(),
    }),
  "proposal.applied": () =>
    z.object({
      proposal_id: z.string(),
      path: z.string(),
      outcome: z.enum(["applied", "conflict", "already_applied"]),
      current_version: hex64.nullable(),
      message: z.string(),
    }),
  "review.resolved": () =>
    z.object({
      call_id: z.string(),
      resolution: z.enum(["applied", "not_applied", "undetermined"]),
      evidence: z.string(),
      by: z.string(),
    }),
  /**
   * One attempt of a goal loop (`--until-accepted N`): the checks' counts after the model's n-th
   * finish, and the host's measure of progress. `continued`: the session goes on, and `feedback`
   * (which checks failed, their exit codes and output tails) is the model's next input, in the same
   * turn, so the turn's budgets span every attempt.
   */
  "acceptance.attempt": () =>
    z.object({
      n: z.number().int().positive(),
      passed: z.number().int().nonnegative(),
      failed: z.number().int().nonnegative(),
      progress: z.object({
        checks_passed: z.number().int().nonnegative(),
        tests_failed: z.number().int().nonnegative().optional(),
        /** Whether this attempt improved on the best before it (the first attempt: true). */
        improved: z.boolean(),
        /** Consecutive attempts, up to this one, that did not improve. */
        stalled: z.number().int().nonnegative(),
      }),
      continued: z.boolean(),
      feedback: z.string().optional(),
    }),
  "acceptance.checked": () =>
    z.object({
      accepted: z.boolean(),
      checks: z.array(
        z.object({
          name: z.string(),
          passed: z.boolean(),
          exit_code: z.number().int().nullable().optional(),
          duration_ms: z.number(),
          output: z.string().optional(),
          /** The whole output's artifacts (stdout, then stderr); absent in older journals. */
          output_artifacts: z.array(z.string()).optional(),
          ...processFacts,
        }),
      ),
    }),
  /**
   * Earlier tool results replaced, in every later request, by a short placeholder naming the
   * artifact that holds the whole result (read_artifact brings it back). The artifacts are stored
   * before this is journaled. Tokens are the estimates of the next request before and after.
   */
  "context.pruned": () =>
    z.object({
      step: z.number().int(),
      results: z.array(z.object({ call_id: z.string(), artifact })).min(1),
      tokens_before: z.number().int().nonnegative(),
      tokens_after: z.number().int().nonnegative(),
    }),
  /**
   * The older conversation replaced by a summary the model wrote in one request without tools
   * (that request's model.started has purpose "compaction"). `replaced_messages` counts the
   * messages, as the fold had them, that the pinned set and the summary replace; the rest follow
   * them unchanged. Tokens are the estimates of the next request before and after.
   */
  "context.compacted": () =>
    z.object({
      step: z.number().int(),
      attempt: z.number().int(),
      summary: z.string(),
      replaced_messages: z.number().int().positive(),
      tokens_before: z.number().int().nonnegative(),
      tokens_after: z.number().int().nonnegative(),
      usage: usage.optional(),
    }),
  "run.finished": () => z.object({ status: z.enum(["verified", "unverified"]), answer: z.string() }),
  "run.stopped": () =>
    z.object({
      status: z.enum(["stopped", "review_required", "needs_review"]),
      reason: z.string(),
      message: z.string(),
      /**
       * `changes_denied`, and `acceptance_failed` after denied changes: the flags that would allow the
       * denied changes, each a flag and its value (absent for other reasons, and in journals written
       * before it was recorded).
       */
      allow: z.array(z.array(z.string())).optional(),
    }),
  "run.cancelled": () => z.object({ reason: z.string() }),
  /**
   * A person chose to trust a journal recorded elsewhere (or before journals were authenticated).
   * Authenticated with their key, it vouches for the chain up to `head_hash` (the chain commits to
   * every record before it), so history is never rewritten.
   */
  "journal.adopted": () =>
    z.object({
      head_hash: hex64,
      records: z.number().int(),
      key_id: z.string(),
      previous_key_id: z.string().nullable(),
      reason: z.string(),
      by: z.string(),
    }),
  /** A writer lock whose owner was provably gone (same host, process absent or replaced) was taken over. */
  "lock.recovered": () =>
    z.object({
      pid: z.number().int(),
      host: z.string(),
      started_at: z.string(),
      proc_start: z.string().nullable(),
      reason: z.string(),
    }),
  /**
   * Steering: input the user typed while a turn ran, journaled when typed. The model is sent it
   * only when `steer.delivered` takes it up, at a step boundary (after the results of the
   * reply's calls, before the next model request), never in the middle of a call.
   */
  "user.steered": () => z.object({ text: z.string() }),
  /** The oldest `count` undelivered steers become user messages here, before the request of `step`. */
  "steer.delivered": () =>
    z.object({ step: z.number().int().nonnegative(), count: z.number().int().positive() }),
  /**
   * The user interrupted the turn: running calls were cancelled (their process trees killed) and
   * recorded; the session stays open for the next turn's `user.input`.
   */
  "turn.interrupted": () => z.object({ turn: z.number().int().positive(), reason: z.string() }),
  /**
   * This session was forked from another: the parent's records up to and including `at_seq` (whose
   * hash is `at_hash`) follow as this session's own, re-chained and authenticated; the parent is unchanged.
   */
  "session.forked": () =>
    z.object({
      parent: z.string(),
      at_seq: z.number().int().nonnegative(),
      at_hash: hex64,
      parent_records: z.number().int().positive(),
      /**
       * The fork's own workspace, when it was materialized into another directory (harness fork
       * --into): the session continues there, so resumes check this identity instead of the parent's.
       */
      workspace: z.object({ name: z.string(), fingerprint: hex64 }).optional(),
    }),
  /**
   * A worker took the session under a lease (journal in PostgreSQL): its epoch fences every later
   * append, and `previous` names the lease it replaced (a dead or released worker), null at first.
   * Calls the previous owner started without a result are then settled as resume settles them.
   */
  "lease.acquired": () =>
    z.object({
      epoch: z.number().int().min(1),
      owner: z.string(),
      previous: z.object({ owner: z.string(), epoch: z.number().int().min(1) }).nullable(),
    }),
  /**
   * The workspace tree when the session started, before its first model request, once per session:
   * `manifest` is the artifact id of the manifest's canonical JSON (`workspace/manifest.ts`), whose
   * files' bytes are kept too; `files` and `bytes` count its regular files; `excluded` the
   * user-configured excludes (paths never recorded). Sessions recorded before it have none.
   */
  "workspace.base": () =>
    z.object({
      manifest: hex64,
      files: z.number().int().nonnegative(),
      bytes: z.number().int().nonnegative(),
      excluded: z.array(z.string()),
    }),
  /**
   * What one call changed in the workspace (a file tool's write, a shell call's, an MCP tool
   * call's or an acceptance command's effects, a hook's (`call_id` `hook:POINT:CALL_ID`), an
   * undo), or a change no call made (`outside`, found at a turn's start or before a shell call;
   * `call_id` is then `outside:SEQ`). Every `before` file's bytes are in the
   * session's artifacts (id = its hash) before this record is journaled. A rename is a delete and a create.
   */
  "workspace.changed": () =>
    changeSetSchema.extend({
      call_id: z.string().min(1),
      source: z.enum(["tool", "shell", "mcp", "hook", "acceptance", "outside", "undo"]),
    }),
  /**
   * An undo begins: the plan, durable before any file is touched. Per path, the entry the file
   * must still have (`expect`, null: absent) and the one it gets back (`restore`, null: deleted).
   * `target.seq`: the workspace returns to its state after that record.
   */
  "undo.started": () =>
    z.object({
      undo_id: z.string().min(1),
      target: z.object({ seq: z.number().int().nonnegative() }),
      plan: z.array(
        z.object({
          path: manifestPathSchema,
          expect: entrySchema.nullable(),
          restore: entrySchema.nullable(),
        }),
      ),
    }),
  /** The undo `undo_id` is over: files put back, and those left alone because they had changed since. */
  "undo.finished": () =>
    z.object({
      undo_id: z.string().min(1),
      restored: z.number().int().nonnegative(),
      conflicts: z.array(z.object({ path: z.string(), reason: z.string() })),
    }),
  /**
   * The person switched the session's model (the chat's /model): from here on the session talks
   * to `to`, and a resume is checked against it instead of `session.started`'s provider. `options`
   * are the run options that rebuild it (as `session.started.options`: no secrets, no host paths).
   */
  "model.switched": () => z.object({ from: jsonObject, to: jsonObject, options: jsonObject }),
  /**
   * The person switched the session's write mode from an editor (ACP `session/set_mode`): calls
   * from here on are decided by the recorded policy narrowed to `to` (`read-only`, `propose`,
   * `ask`, `allow`). `ceiling` is the loosest mode the session's configuration allows; a switch
   * never goes past it. `by` says which door asked.
   */
  "mode.switched": () =>
    z.object({
      from: z.enum(["read-only", "propose", "ask", "allow"]),
      to: z.enum(["read-only", "propose", "ask", "allow"]),
      ceiling: z.enum(["read-only", "propose", "ask", "allow"]),
      by: z.string(),
    }),
  /**
   * The person ran a shell command themselves (the chat's `!command`): the `shell` call `call_id`
   * (`user:N`) that follows is theirs, not the model's. It is authorized, sandboxed and journaled
   * as the model's calls are (tool.started, process.spawned, workspace.changed, tool.result), but
   * its result is never a message to the model; `share`: the person asked to send the command and
   * its output with their next message (`!!command`), which then records it in its user.input.
   */
  "user.command": () =>
    z.object({
      call_id: z.string().min(1),
      command: z.string().min(1),
      share: z.boolean(),
    }),
  /**
   * The `agent` call `call_id` starts a child session `child_session` (`PARENT/LABEL`): durable
   * before the child's first request. `grant` is what the child may do (the intersection of this
   * session's policy and what the call asked, with what was asked and not granted), `budget` what
   * was reserved for it from this session's remaining budgets.
   */
  "agent.started": () =>
    z.object({
      call_id: z.string().min(1),
      label: z.string().min(1),
      child_session: z.string().min(1),
      depth: z.number().int().positive(),
      grant: jsonObject,
      budget: agentBudget,
    }),
  /** An approval asked inside a child went to this session's approver: what was decided. */
  "agent.approval": () =>
    z.object({
      label: z.string().min(1),
      call_id: z.string().min(1),
      tool: z.string().optional(),
      decision: z.enum(["allow", "deny"]),
      by: z.string().optional(),
    }),
  /**
   * A child's changes are about to be merged into this workspace: the intent, durable before any
   * file is touched. The files merged are then `workspace.changed` records under `call_id`.
   */
  "agent.merge": () =>
    z.object({
      call_id: z.string().min(1),
      files: z.array(agentChange),
    }),
  /**
   * The child of `call_id` is over (cancelled children too): its outcome, the hash of its journal's
   * last record, what it spent, what it changed, what conflicted, and how many of its processes
   * were found alive after it ended (and killed).
   */
  "agent.finished": () =>
    z.object({
      call_id: z.string().min(1),
      child_session: z.string().min(1),
      head_hash: hex64.nullable(),
      outcome: z.enum(AGENT_OUTCOMES),
      usage: agentUsage,
      changes: z.array(agentChange),
      conflicts: z.array(z.object({ path: z.string(), reason: z.string() })),
      survivors: z.number().int().nonnegative(),
    }),
} as const;

export const EVENT_SCHEMAS = lazyRecord(EVENT_SCHEMA_BUILDERS);

export type EventType = keyof typeof EVENT_SCHEMAS;
export type EventData<T extends EventType> = z.infer<(typeof EVENT_SCHEMAS)[T]>;
export const EVENT_TYPES = Object.keys(EVENT_SCHEMAS) as EventType[];

export function isEventType(type: string): type is EventType {
  return Object.hasOwn(EVENT_SCHEMAS, type);
}

/**
 * One durable journal line. `hash` = SHA-256 of RFC 8785 JSON of the record without `hash` and
 * `mac`; `mac` = HMAC-SHA256 of `hash` under the writer's journal key (absent in records written
 * before journals were authenticated, which are never trusted).
 */
export interface JournalRecord<T extends EventType = EventType> {
  seq: number;
  type: T;
  time: string;
  data: EventData<T>;
  prev: string;
  hash: string;
  mac?: string;
}

export type AnyRecord = { [T in EventType]: JournalRecord<T> }[EventType];

export interface NewEvent<T extends EventType = EventType> {
  type: T;
  data: EventData<T>;
}

export type AnyNewEvent = { [T in EventType]: NewEvent<T> }[EventType];

export const GENESIS_HASH = "0".repeat(64);

export function event<T extends EventType>(type: T, data: EventData<T>): NewEvent<T> {
  return { type, data };
}
