import { z } from "zod";
import { RPC, RpcError } from "./wire.js";

/*
 * The params of every method the server answers (JSON-RPC, protocol version 1). Unknown keys
 * are refused, so a client's typo is an error rather than an option silently ignored.
 */

const sessionId = z.string().min(1).max(64);
const seq = z.number().int().nonnegative();

/** `harness run`'s options, `-` spelled `_`. */
export const runOptionsSchema = z.strictObject({
  script: z.string().min(1).optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  base_url: z.string().min(1).optional(),
  profile: z.string().min(1).optional(),
  write: z.boolean().optional(),
  shell: z.boolean().optional(),
  tools: z.string().min(1).optional(),
  accept: z.array(z.string().min(1)).optional(),
  propose: z.boolean().optional(),
  max_model_requests: z.number().int().positive().optional(),
  max_tool_calls: z.number().int().positive().optional(),
  approval_timeout_ms: z.number().int().positive().optional(),
});

export type RunOptions = z.infer<typeof runOptionsSchema>;

export const METHOD_PARAMS = {
  initialize: z.strictObject({
    client: z.strictObject({ name: z.string(), version: z.string() }).optional(),
    protocol_version: z.literal(1).optional(),
  }),
  "session/start": z.strictObject({
    workspace: z.string().min(1),
    goal: z.string().min(1).optional(),
    session: sessionId.optional(),
    options: runOptionsSchema.optional(),
  }),
  "session/list": z.strictObject({ workspace: z.string().min(1).optional() }),
  "session/read": z.strictObject({
    session: sessionId,
    from_seq: seq.optional(),
    limit: z.number().int().positive().optional(),
  }),
  "session/verify": z.strictObject({ session: sessionId }),
  "session/subscribe": z.strictObject({ session: sessionId, from_seq: seq.optional() }),
  "session/unsubscribe": z.strictObject({ session: sessionId }),
  "turn/start": z.strictObject({ session: sessionId, input: z.string().min(1) }),
  "turn/steer": z.strictObject({ session: sessionId, input: z.string().min(1) }),
  "turn/interrupt": z.strictObject({ session: sessionId }),
  "approval/list": z.strictObject({ session: sessionId.optional() }),
  "approval/respond": z.strictObject({
    approval_id: z.string().min(1),
    decision: z.enum(["accept", "accept_session", "decline"]),
  }),
  "session/fork": z.strictObject({ session: sessionId, at_seq: seq.optional() }),
  "session/compact": z.strictObject({ session: sessionId, instructions: z.string().optional() }),
  shutdown: z.strictObject({}),
} as const;

export type MethodName = keyof typeof METHOD_PARAMS;
export type ParamsOf<M extends MethodName> = z.infer<(typeof METHOD_PARAMS)[M]>;

export function isMethod(name: string): name is MethodName {
  return Object.hasOwn(METHOD_PARAMS, name);
}

/** Params as the method takes them, or -32602 with the (short) zod issues. */
export function parseParams<M extends MethodName>(method: M, params: unknown): ParamsOf<M> {
  const parsed = METHOD_PARAMS[method].safeParse(params);
  if (parsed.success) return parsed.data as ParamsOf<M>;
  const issues = parsed.error.issues.slice(0, 10).map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
  throw new RpcError(RPC.INVALID_PARAMS, `invalid params for ${method}: ${z.prettifyError(parsed.error)}`, {
    issues,
  });
}
