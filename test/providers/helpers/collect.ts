import type { StreamEvent, ToolSpec } from "../../../src/protocol/types.js";
import type { ModelRequest, Provider } from "../../../src/providers/provider.js";
import { ProviderError } from "../../../src/providers/provider.js";

/** The JSON Schema of the `read` tool the "what is sent" tests offer, and that tool. */
export const READ_SCHEMA = {
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
  additionalProperties: false,
};
export const READ_TOOLS: ToolSpec[] = [
  { name: "read", description: "Read a file.", input_schema: READ_SCHEMA },
];

export function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [{ role: "user", content: "hello" }],
    tools: [],
    step: 0,
    attempt: 0,
    ordinal: 0,
    ...overrides,
  };
}

export interface Collected {
  events: StreamEvent[];
  error?: ProviderError;
}

/** Drain a provider stream: every event, plus the ProviderError it threw (anything else fails the test). */
export async function collect(
  provider: Provider,
  req: ModelRequest = request(),
  signal?: AbortSignal,
): Promise<Collected> {
  const events: StreamEvent[] = [];
  try {
    for await (const event of provider.stream(req, signal ?? new AbortController().signal)) {
      events.push(event as StreamEvent);
    }
    return { events };
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    return { events, error };
  }
}

/** What a decoder would do: may anything in this stream be executed? */
export function endsNormally(events: readonly StreamEvent[]): boolean {
  const ends = events.filter((e) => e.type === "end");
  const last = ends.at(-1);
  return last !== undefined && (last.reason === "stop" || last.reason === "tool_calls");
}

export function text(events: readonly StreamEvent[]): string {
  return events.flatMap((e) => (e.type === "text_delta" ? [e.text] : [])).join("");
}

/** Tool calls reassembled from their fragments: id, name from the first fragment, joined arguments. */
export function calls(
  events: readonly StreamEvent[],
): { id: string; name: string | undefined; arguments: string; fragments: number }[] {
  const byId = new Map<
    string,
    { id: string; name: string | undefined; arguments: string; fragments: number }
  >();
  for (const event of events) {
    if (event.type !== "tool_call_delta") continue;
    const call = byId.get(event.call_id);
    if (call === undefined)
      byId.set(event.call_id, {
        id: event.call_id,
        name: event.name,
        arguments: event.arguments,
        fragments: 1,
      });
    else {
      call.arguments += event.arguments;
      call.fragments += 1;
    }
  }
  return [...byId.values()];
}

export function lastEnd(events: readonly StreamEvent[]): Extract<StreamEvent, { type: "end" }> | undefined {
  return events.filter((e): e is Extract<StreamEvent, { type: "end" }> => e.type === "end").at(-1);
}
