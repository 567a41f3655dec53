import type { ConnectionInfo, CredentialUseInfo } from "../engine/recovery.js";
import type { EgressCredentials, EgressDecision } from "../network/proxy.js";
import { evaluateNetwork } from "../policy/network.js";
import type { Policy } from "../policy/permissions.js";
import { formatNetTarget } from "../rules/net-pattern.js";
import type { ApprovalPort } from "../runtime/ports.js";
import { type UntrustedView, untrustedReason } from "../runtime/untrusted.js";
import type { NetworkAccess } from "../sandbox/executor.js";
import { digestOf } from "../shared/hash.js";

/**
 * A session's network for its processes: with `--network policy`, each shell call (and each
 * acceptance command) gets access of its own, deciding every connection by the `net(...)` rules
 * and journaling each as `net.connection` with the call's id. An `ask` goes to the session's
 * approver showing the host, the port and the call that wants it; the answer holds for that
 * call (or, answered "for the session", for every later call) and that host and port only.
 *
 * Untrusted content cannot unlock egress: once the model has seen some this turn, a connection
 * to a host not contacted before in the session (or one a credential is bound to) asks a person
 * even where a rule allows it, the question naming the content that came before; no approver,
 * or a refusal, denies, and `net.connection` records that reason.
 *
 * A command hook with `"network": true` gets access of its own for each run, under the id of the
 * call it ran for and its own name (`net.connection.hook`). A hook cannot ask a person: it runs
 * inside a call's pipeline under a timeout of seconds (an admit hook while that call is itself
 * being authorized), where a question would hold the call or expire unanswered. So where a
 * command would ask, a hook's connection is denied, the reason saying so; an answer a person
 * gave "for the session" still holds as it would for a command.
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
  /** This turn's untrusted content and the hosts contacted before (absent: nothing is ever tainted). */
  untrusted?: UntrustedView;
  /**
   * Whether a credential is bound to this host (its connections carry a secret): after untrusted
   * content such a connection always asks. The seam for credential substitution; absent: none.
   */
  credentialBound?: (host: string, port: number) => boolean;
  /** The session's credentials (session/credentials.ts): substituted for their bound hosts. */
  credentials?: Omit<EgressCredentials, "used">;
  /** Journal a substitution (`credential.used`); a rejection is ignored. */
  recordCredential?: (use: CredentialUseInfo) => Promise<void>;
}

/** Who makes the connections when it is not the call's own processes. */
export interface NetworkRequester {
  /** The command hook (its name) running for the call. */
  hook: string;
}

/** Network access for the call `callId` (or for a hook running for it). */
export type CallNetwork = (callId: string, signal?: AbortSignal, by?: NetworkRequester) => NetworkAccess;

/**
 * The networks of sub-agents, by session id, whose calls run the hooks of the session that holds
 * this map (undefined: that child has none).
 */
export type HookNetworks = Map<string, CallNetwork | undefined>;

/** Why a hook's connection that would have asked was denied instead. */
export const HOOK_CANNOT_ASK = "a command hook cannot ask a person";

export function sessionNetwork(options: SessionNetworkOptions): CallNetwork {
  // Targets a person allowed or denied for the rest of the session.
  const sessionAnswers = new Map<string, boolean>();
  return (callId, signal, by) => {
    const callAnswers = new Map<string, Promise<boolean>>();
    const hook = by === undefined ? {} : { hook: by.hook };
    const ask = (
      target: string,
      host: string,
      port: number,
      reason: string,
      preceded?: string,
    ): Promise<boolean | "unasked"> => {
      const kept = sessionAnswers.get(target);
      // A "for the session" answer stands, unless untrusted content came before: then only a
      // refusal does (an earlier allow was not given knowing what the model has read since).
      if (kept !== undefined && (preceded === undefined || !kept)) return Promise.resolve(kept);
      // A hook has no one to ask: what would be a question is a refusal (see above).
      if (by !== undefined) return Promise.resolve("unasked");
      const key = preceded === undefined ? target : `${target} untrusted`;
      let answer = callAnswers.get(key);
      if (answer === undefined) {
        const request = { callId, host, port, target, reason, ...(preceded ? { preceded } : {}) };
        answer = askApprover(options.approver(), request, signal).then(({ allowed, session }) => {
          if (session) sessionAnswers.set(target, allowed);
          return allowed;
        });
        callAnswers.set(key, answer);
      }
      return answer;
    };
    /** The untrusted content that makes this connection a widening, if it is one. */
    const widening = (host: string, port: number, target: string): string | undefined => {
      const seen = options.untrusted?.untrusted() ?? [];
      if (seen.length === 0) return undefined;
      if (options.untrusted?.contacted(target) && !options.credentialBound?.(host, port)) return undefined;
      return untrustedReason(seen);
    };
    return {
      decide: async (host, port): Promise<EgressDecision> => {
        const evaluation = evaluateNetwork(options.policy, host, port);
        const rule = evaluation.rule !== undefined ? { rule: evaluation.rule } : {};
        if (evaluation.decision === "deny") {
          return { decision: "deny", reason: evaluation.reason, exact: false, ...rule };
        }
        const preceded = widening(host, port, evaluation.target);
        if (evaluation.decision === "ask" || preceded !== undefined) {
          const asked = preceded === undefined ? evaluation.reason : `${preceded}; ${evaluation.reason}`;
          const answer = await ask(evaluation.target, host, port, asked, preceded);
          const allowed = answer === true;
          const reason = answer === "unasked" ? `${HOOK_CANNOT_ASK} (hook ${by?.hook}): ${asked}` : asked;
          return allowed
            ? {
                decision: "allow",
                reason: `approved: ${reason}`,
                exact: evaluation.exact,
                ...rule,
              }
            : { decision: "deny", reason: `not approved: ${reason}`, exact: false, ...rule };
        }
        return { decision: "allow", reason: evaluation.reason, exact: evaluation.exact, ...rule };
      },
      record: (connection) => {
        void options.record({ call_id: callId, ...hook, ...connection }).catch(() => undefined);
      },
      ...(options.credentials !== undefined
        ? {
            credentials: {
              ...options.credentials,
              used: (name: string, host: string) => {
                void options
                  .recordCredential?.({ call_id: callId, ...hook, name, host })
                  .catch(() => undefined);
              },
            },
          }
        : {}),
    };
  };
}

async function askApprover(
  approver: ApprovalPort | undefined,
  request: { callId: string; host: string; port: number; target: string; reason: string; preceded?: string },
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
            ...(request.preceded !== undefined ? { untrusted: request.preceded } : {}),
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
