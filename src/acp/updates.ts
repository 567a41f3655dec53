import type { SessionUpdate, ToolCallContent, ToolKind } from "@agentclientprotocol/sdk";
import type { AnyRecord } from "../journal/vocabulary.js";
import type { WholeChange } from "./preview.js";

/**
 * What an editor is shown of a session, from its journal records: the same mapping live (as
 * records are written) and on `session/load` (replayed from the verified journal), so a loaded
 * session looks as it did. Pure: no I/O, no clock.
 */
export class UpdateMapper {
  /** Text streamed since the last model request: its reply's text is not sent twice. */
  #streamed = false;
  /** Acceptance checks, as plan entries (the host sets their status). */
  readonly #checks = new Map<string, "pending" | "in_progress" | "completed">();
  readonly #acceptance: readonly string[];

  constructor(
    acceptance: readonly string[],
    /** Live (not a replay): the editor showed the prompt itself; edits are previewed. */
    private readonly live?: {
      /** An edit's or write's whole old and new text, read before it runs. */
      preview(tool: string, args: Record<string, unknown>): WholeChange | undefined;
      /** The context window usage is measured against. */
      window: number;
    },
  ) {
    this.#acceptance = acceptance;
    for (const command of acceptance) this.#checks.set(command, "pending");
  }

  /** A streamed text delta of the running model request. */
  text(delta: string): SessionUpdate {
    this.#streamed = true;
    return { sessionUpdate: "agent_message_chunk", content: { type: "text", text: delta } };
  }

  /** The plan of acceptance checks as it stands (none when the session has no checks). */
  plan(): SessionUpdate | undefined {
    if (this.#checks.size === 0) return undefined;
    return {
      sessionUpdate: "plan",
      entries: [...this.#checks].map(([command, status]) => ({
        content: `acceptance: ${command}`,
        priority: "high",
        status,
      })),
    };
  }

  record(record: AnyRecord): SessionUpdate[] {
    switch (record.type) {
      // Live, the editor shows what its user typed; a replay shows it from the journal.
      case "session.started":
        return this.live ? [] : [userText(record.data.goal)];
      case "user.input":
        // Turn 1's input is the goal session.started already showed.
        return this.live || record.data.turn === 1 ? [] : [userText(record.data.text)];
      case "user.steered":
        return [userText(record.data.text)];
      case "model.started":
        this.#streamed = false;
        return [];
      case "model.reply": {
        const out: SessionUpdate[] = [];
        if (!this.#streamed && record.data.text !== "")
          out.push({
            sessionUpdate: "agent_message_chunk",
            content: { type: "text", text: record.data.text },
          });
        this.#streamed = false;
        for (const call of record.data.calls) {
          const change = this.live?.preview(call.name, call.arguments);
          out.push({
            sessionUpdate: "tool_call",
            toolCallId: call.id,
            title: titleOf(call.name, call.arguments),
            kind: kindOf(call.name),
            status: "pending",
            rawInput: call.arguments,
            ...(change !== undefined ? { content: [{ type: "diff", ...change }] } : {}),
            ...(change !== undefined ? { locations: [{ path: change.path }] } : {}),
          });
        }
        const usage = record.data.usage;
        if (this.live && usage?.input_tokens !== undefined)
          out.push({
            sessionUpdate: "usage_update",
            used: (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0),
            size: this.live.window,
          });
        return out;
      }
      case "tool.started":
        if (record.data.parent_call_id !== undefined) return [];
        return [
          { sessionUpdate: "tool_call_update", toolCallId: record.data.call_id, status: "in_progress" },
        ];
      case "tool.result": {
        if (record.data.parent_call_id !== undefined) return [];
        const content: ToolCallContent[] = [
          { type: "content", content: { type: "text", text: record.data.content } },
        ];
        return [
          {
            sessionUpdate: "tool_call_update",
            toolCallId: record.data.call_id,
            status: record.data.status === "ok" ? "completed" : "failed",
            content,
            rawOutput: { summary: record.data.summary, status: record.data.status },
          },
        ];
      }
      case "acceptance.checked": {
        const data = record.data as { command?: unknown; passed?: unknown };
        if (typeof data.command === "string" && this.#checks.has(data.command))
          this.#checks.set(data.command, "completed");
        const plan = this.plan();
        return plan ? [plan] : [];
      }
      case "mode.switched":
        return [{ sessionUpdate: "current_mode_update", currentModeId: record.data.to }];
      case "run.stopped":
      case "run.cancelled":
      case "turn.interrupted":
      case "run.finished":
        return [];
      default:
        return [];
    }
  }

  get acceptance(): readonly string[] {
    return this.#acceptance;
  }
}

function userText(text: string): SessionUpdate {
  return { sessionUpdate: "user_message_chunk", content: { type: "text", text } };
}

function kindOf(tool: string): ToolKind {
  if (tool === "read_file" || tool === "read_artifact") return "read";
  if (tool === "edit_file" || tool === "write_file") return "edit";
  if (tool === "glob" || tool === "grep" || tool === "tool_search") return "search";
  if (tool === "shell") return "execute";
  return "other";
}

function titleOf(tool: string, args: Record<string, unknown>): string {
  if (typeof args.command === "string") return `${tool}: ${args.command}`;
  if (typeof args.path === "string") return `${tool} ${args.path}`;
  if (typeof args.pattern === "string") return `${tool} ${args.pattern}`;
  return tool;
}
