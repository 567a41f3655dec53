import { createParser } from "eventsource-parser";
import { EventSizeGuard, MAX_SSE_EVENT_SIZE } from "./event-size.js";

export interface ServerSentEvent {
  /** The `event:` field; undefined for the default `message` type. */
  event: string | undefined;
  data: string;
}

/**
 * Decode a text stream as server-sent events. Comments (`: keep-alive`) are skipped; an event
 * still unterminated when the stream ends is dropped, as the SSE specification requires, so a
 * cut connection never yields half an event. More than `maxEventSize` characters without an event
 * boundary ends the stream with a ProviderError.
 */
export async function* serverSentEvents(
  chunks: AsyncIterable<string>,
  onChunk: () => void = () => undefined,
  maxEventSize: number = MAX_SSE_EVENT_SIZE,
): AsyncGenerator<ServerSentEvent> {
  const ready: ServerSentEvent[] = [];
  const guard = new EventSizeGuard(maxEventSize);
  const parser = createParser({
    onEvent: (event) => ready.push({ event: event.event, data: event.data }),
  });
  for await (const chunk of chunks) {
    onChunk();
    guard.feed(chunk);
    parser.feed(chunk);
    for (const event of ready) yield event;
    ready.length = 0;
  }
}
