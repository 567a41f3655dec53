import { DEFAULT_OUTPUT_LIMITS } from "../protocol/limits.js";
import {
  type ModelRequest,
  type Provider,
  ProviderError,
  type ProviderIdentity,
} from "../providers/provider.js";
import type { JsonObject } from "../shared/json.js";

/** One tool call an MCP client asked for, waiting to enter the session as a "model" reply. */
export interface ClientCall {
  id: string;
  name: string;
  arguments: JsonObject;
}

/** What the session's last reply says when the client went away (the session ends there). */
export const CLIENT_GONE_TEXT = "the MCP client closed the connection";

/**
 * The MCP client in the place of the model: in a served session the client proposes the tool
 * calls, so its calls enter the engine exactly where a model's reply would. Each "model step"
 * waits for the calls the client has sent since the last one and hands them over as one reply;
 * the engine journals that reply and runs the calls through the runtime like any model's.
 * Nothing here decides or runs anything.
 */
export class ClientModel implements Provider {
  readonly identity: ProviderIdentity = { kind: "mcp-client", name: "mcp serve" };
  private readonly queue: ClientCall[] = [];
  private wake: (() => void) | undefined;
  private closed = false;

  /** A call for the next step (the transport bounds its size; see take). */
  submit(call: ClientCall): void {
    if (this.closed) throw new Error("the served session is closed");
    this.queue.push(call);
    this.wake?.();
  }

  /** No more calls: the next step is a reply without calls, which ends the session. */
  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<unknown> {
    if (request.purpose === "compaction") {
      // A client is not a model: it cannot summarize, and its queued calls must not be taken
      // as a summary. An empty summary makes the compaction fail; the calls stay queued.
      yield { type: "end", reason: "stop" };
      return;
    }
    const calls = await this.take(signal);
    if (calls.length === 0) {
      yield { type: "text_delta", text: CLIENT_GONE_TEXT };
      yield { type: "end", reason: "stop" };
      return;
    }
    for (const call of calls) {
      yield {
        type: "tool_call_delta",
        call_id: call.id,
        name: call.name,
        arguments: JSON.stringify(call.arguments),
      };
    }
    yield { type: "end", reason: "tool_calls" };
  }

  /** Waits for at least one call (or the end); at most one reply's worth of calls at a time. */
  private async take(signal: AbortSignal): Promise<ClientCall[]> {
    while (this.queue.length === 0 && !this.closed) {
      if (signal.aborted) throw new ProviderError("CANCELLED", "the served session was stopped");
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
    // One reply stays within what the decoder takes whole: a call whose arguments break a
    // limit is refused on its own (INVALID_ARGUMENTS), never the whole session's stream.
    const limits = DEFAULT_OUTPUT_LIMITS;
    let characters = 0;
    let count = 0;
    for (const call of this.queue) {
      const size = JSON.stringify(call.arguments).length;
      if (count > 0 && (count >= limits.maxCalls || characters + size > limits.maxReplyArgumentsChars)) break;
      characters += size;
      count += 1;
    }
    return this.queue.splice(0, count);
  }
}
