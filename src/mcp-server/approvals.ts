import { randomBytes } from "node:crypto";
import {
  type ElicitRequestFormParams,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
} from "@modelcontextprotocol/server";
import type { ApprovalDecision } from "../runtime/ports.js";
import { collapseSpaceRuns } from "../shared/approval-text.js";
import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import { jsonForTerminal } from "../shared/terminal-text.js";
import type { ApprovalAsk } from "./served-session.js";

/** The most of a call's arguments an approval message shows (its start and end beyond that). */
const MESSAGE_CHARS = 2000;

/** The key of the one embedded elicitation an approval sends. */
const KEY = "approval";

const SCHEMA: ElicitRequestFormParams["requestedSchema"] = {
  type: "object",
  properties: {
    approve: { type: "boolean", title: "Allow this call" },
    remember: {
      type: "boolean",
      title: "Also allow the same tool on the same subject for the rest of this session",
      default: false,
    },
  },
  required: ["approve"],
};

interface Waiting {
  callId: string;
  ask: ApprovalAsk;
  /** The call the question was about: the retry must be exactly this call. */
  digest: string;
}

/**
 * Approvals as elicitation, in the multi-round-trip form every protocol era shares: the
 * tools/call that needs an answer returns `input_required` with an elicitation and an opaque
 * state token; the client (or the SDK's shim, on a 2025-era connection) asks its user and
 * sends the call again with the answer and the token. The token is random and names one
 * waiting question; a retry for another call, or an unknown token, answers nothing.
 */
export class ApprovalDesk {
  private readonly waiting = new Map<string, Waiting>();

  /** The input_required result asking the client about a call. */
  ask(callId: string, name: string, args: JsonObject, ask: ApprovalAsk): InputRequiredResult {
    const token = randomBytes(18).toString("base64url");
    this.waiting.set(token, { callId, ask, digest: digestOf({ name, args }) });
    return inputRequired({
      requestState: token,
      inputRequests: {
        [KEY]: inputRequired.elicit({ message: approvalMessage(ask), requestedSchema: SCHEMA }),
      },
    });
  }

  /**
   * A retried call carrying an answer: which call it continues, after passing the client's
   * answer to the runtime. Anything but an accepted `approve: true` denies.
   */
  answer(
    token: string,
    name: string,
    args: JsonObject,
    responses: Record<string, unknown> | undefined,
  ): { callId: string } | { error: string } {
    const waiting = this.waiting.get(token);
    if (!waiting)
      return { error: "this approval answer belongs to no waiting call (unknown or already answered)" };
    if (waiting.digest !== digestOf({ name, args })) {
      return { error: "the call sent with the approval answer is not the call that was asked about" };
    }
    this.waiting.delete(token);
    waiting.ask.answer(decisionOf(responses));
    return { callId: waiting.callId };
  }
}

function decisionOf(responses: Record<string, unknown> | undefined): ApprovalDecision {
  const view = inputResponse(responses, KEY);
  if (view.kind !== "elicit") {
    return { decision: "deny", scope: "once", by: "mcp-client", reason: "no approval answer was sent" };
  }
  if (view.action !== "accept") {
    return { decision: "deny", scope: "once", by: "mcp-client", reason: `the user chose ${view.action}` };
  }
  if (view.content?.approve !== true) {
    return { decision: "deny", scope: "once", by: "mcp-client", reason: "the user did not approve" };
  }
  return { decision: "allow", scope: view.content.remember === true ? "session" : "once", by: "mcp-client" };
}

/** What the user is asked: the tool, what it acts on, why the policy asks. */
function approvalMessage(ask: ApprovalAsk): string {
  const { request } = ask;
  // Escaped like a terminal's prompt (bidi overrides, zero-width characters) and with runs of
  // spaces counted, so padding cannot push what matters out of what the client shows.
  const shown = collapseSpaceRuns(
    jsonForTerminal(request.display ? { ...request.arguments, ...request.display } : request.arguments),
  );
  // A long call is never cut silently: a cut end is where a model would put the dangerous part.
  const body =
    shown.length <= MESSAGE_CHARS
      ? [shown]
      : [
          shown.slice(0, MESSAGE_CHARS / 2),
          `[… ${shown.length - MESSAGE_CHARS} characters not shown …]`,
          shown.slice(shown.length - MESSAGE_CHARS / 2),
          `note: this call is ${shown.length} characters long and only its start and end are shown: deny it unless you have read all of it`,
        ];
  return [
    `harness asks before running ${request.tool} (${request.effect}):`,
    ...body,
    ...(request.reason ? [`why: ${request.reason}`] : []),
  ].join("\n");
}
