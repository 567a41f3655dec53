import type { ConnectionInfo } from "../engine/recovery.js";
import type { EgressDecision } from "../network/proxy.js";
import { evaluateNetwork } from "../policy/network.js";
import type { Policy } from "../policy/permissions.js";
import { formatNetTarget } from "../rules/net-pattern.js";
import type { ApprovalPort } from "../runtime/ports.js";
import type { NetworkAccess } from "../sandbox/executor.js";
import { digestOf } from "../shared/hash.js";

/**
 * A session's network for its processes: with `--network policy`, each shell call (and each
 * acceptance command) gets access of its own, deciding every connection by the `net(...)` rules
 * and journaling each as `net.connection` with the call's id. An `ask` goes to the session's
 * approver showing the host, the port and the call that wants it; the answer holds for that
 * call (or, answered "for the session", for every later call) and that host and port only.
 */

/** `off`: no network at all (the default); `policy`: through the proxy, by the `net(...)` rules. */
export type NetworkMode = "off" | "policy";
export const NETWORK_MODES: readonly NetworkMode[] = ["off", "policy"];

export interface SessionNetworkOptions {
  policy: Pick<Policy, "rules">;
  /** The session's approver; read when an ask happens (it is built after the tools). */
  approver: () => ApprovalPort | undefined;
  /** Journal one connection (the engine's recorder); a rejection is ignored (the call still ends). */
  record: (connection: ConnectionInfo) => Promise<void>;
}

/** Network access for the call `callId`. */
export type CallNetwork = (callId: string, signal?: AbortSignal) => NetworkAccess;

export function sessionNetwork(options: SessionNetworkOptions): CallNetwork {
  // Targets a person allowed or denied for the rest of the session.
  const sessionAnswers = new Map<string, boolean>();
  return (callId, signal) => {
    const callAnswers = new Map<string, Promise<boolean>>();
    const ask = (target: string, host: string, port: number, reason: string): Promise<boolean> => {
      const kept = sessionAnswers.get(target);
      if (kept !== undefined) return Promise.resolve(kept);
      let answer = callAnswers.get(target);
      if (answer === undefined) {
        answer = askApprover(options.approver(), { callId, host, port, target, reason }, signal).then(
          ({ allowed, session }) => {
            if (session) sessionAnswers.set(target, allowed);
            return allowed;
          },
        );
        callAnswers.set(target, answer);
      }
      return answer;
    };
    return {
      decide: async (host, port): Promise<EgressDecision> => {
        const evaluation = evaluateNetwork(options.policy, host, port);
        const rule = evaluation.rule !== undefined ? { rule: evaluation.rule } : {};
        if (evaluation.decision === "deny") {
          return { decision: "deny", reason: evaluation.reason, exact: false, ...rule };
        }
        if (evaluation.decision === "ask") {
          const allowed = await ask(evaluation.target, host, port, evaluation.reason);
          return allowed
            ? {
                decision: "allow",
                reason: `approved: ${evaluation.reason}`,
                exact: evaluation.exact,
                ...rule,
              }
            : { decision: "deny", reason: `not approved: ${evaluation.reason}`, exact: false, ...rule };
        }
        return { decision: "allow", reason: evaluation.reason, exact: evaluation.exact, ...rule };
      },
      record: (connection) => {
        void options.record({ call_id: callId, ...connection }).catch(() => undefined);
      },
    };
  };
}

async function askApprover(
  approver: ApprovalPort | undefined,
  request: { callId: string; host: string; port: number; target: string; reason: string },
  signal: AbortSignal | undefined,
): Promise<{ allowed: boolean; session: boolean }> {
  if (approver === undefined) return { allowed: false, session: false };
  const args = { host: request.host, port: request.port };
  try {
    const decision = await approver.request(
      {
        callId: request.callId,
        tool: "net",
        arguments: args,
        effect: "network_read",
        callHash: digestOf({ tool: "net", arguments: args, call: request.callId }),
        subject: { kind: "none", value: formatNetTarget(request.host, request.port) },
        reason: request.reason,
        display: {
          details: {
            host: request.host,
            port: String(request.port),
            call: request.callId,
            connection: `call ${request.callId} wants to connect to ${request.target}`,
          },
        },
      },
      signal ?? new AbortController().signal,
    );
    return { allowed: decision.decision === "allow", session: decision.scope === "session" };
  } catch {
    return { allowed: false, session: false };
  }
}
