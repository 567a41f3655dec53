import type { ModelRequest, Provider } from "../../src/providers/provider.js";

/**
 * A model that reads sub/f(step % 20).txt for `reads` steps, then finishes; each compaction
 * request gets a numbered summary. Used by the long-context tests.
 */
export function reader(reads: number): Provider {
  let summaries = 0;
  return {
    identity: { kind: "test", model: "reader" },
    async *stream(request: ModelRequest) {
      if (request.purpose === "compaction") {
        summaries += 1;
        yield {
          type: "text_delta",
          text: `Summary ${summaries} at step ${request.step}: read files in turn.`,
        };
        yield { type: "end", reason: "stop" };
        return;
      }
      if (request.step < reads) {
        yield {
          type: "tool_call_delta",
          call_id: `read-${request.step}`,
          name: "read_file",
          arguments: JSON.stringify({ path: `sub/f${request.step % 20}.txt` }),
        };
      } else {
        yield { type: "text_delta", text: "done" };
      }
      yield { type: "end", reason: request.step < reads ? "tool_calls" : "stop" };
    },
  };
}
