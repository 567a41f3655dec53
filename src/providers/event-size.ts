import { DEFAULT_OUTPUT_LIMITS } from "../protocol/limits.js";
import { ProviderError } from "./provider.js";

/**
 * The most a stream may deliver between two event boundaries (blank lines): a whole reply's
 * worth (`maxStreamChars`, counted here in characters or bytes as the stream arrives). Why: an SSE
 * parser holds an unfinished line and event in memory, so an endpoint that never ends a line
 * (`data: ` and a gigabyte of text) grew harness to 1.4 GB before V8 gave up with "Invalid string
 * length". No event this large could be a reply the decoder would accept.
 */
export const MAX_SSE_EVENT_SIZE = DEFAULT_OUTPUT_LIMITS.maxStreamChars;

const LF = 10;
const CR = 13;

/**
 * Counts what arrived since the last blank line and throws a ProviderError once that passes the
 * limit (not retried: the same endpoint would send it again). `\r` is not counted as a line end, so
 * a stream with bare-CR line ends is measured as one event: still bounded, merely refused sooner.
 */
export class EventSizeGuard {
  #sinceBoundary = 0;
  #lineLength = 0;

  constructor(private readonly max: number = MAX_SSE_EVENT_SIZE) {}

  /** Account for one chunk (a string or bytes; code units either way). */
  feed(chunk: string | Uint8Array): void {
    const length = chunk.length;
    for (let i = 0; i < length; i += 1) {
      const unit = typeof chunk === "string" ? chunk.charCodeAt(i) : (chunk[i] as number);
      this.#sinceBoundary += 1;
      if (unit === LF) {
        if (this.#lineLength === 0) this.#sinceBoundary = 0;
        this.#lineLength = 0;
      } else if (unit !== CR) {
        this.#lineLength += 1;
      }
    }
    if (this.#sinceBoundary > this.max) {
      throw new ProviderError(
        "SERVER",
        `malformed response: the stream sent more than ${this.max} characters without completing an event`,
        { providerCode: "invalid_response", retryable: false },
      );
    }
  }
}

/**
 * An event stream's body passed through an EventSizeGuard: the stream errors with its
 * ProviderError instead of delivering more. For SDKs that parse the stream themselves.
 */
export function boundedEventStream(
  body: ReadableStream<Uint8Array>,
  max: number = MAX_SSE_EVENT_SIZE,
): ReadableStream<Uint8Array> {
  const guard = new EventSizeGuard(max);
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        guard.feed(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
}

/**
 * A response body that is not an event stream (an error's JSON, say) passed through a bound on
 * its whole size: the SDKs read such a body whole into one string, and an endpoint answering 400
 * with a gigabyte of text grew harness to 2.5 GB.
 */
export function boundedBody(
  body: ReadableStream<Uint8Array>,
  max: number = MAX_SSE_EVENT_SIZE,
): ReadableStream<Uint8Array> {
  let total = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        total += chunk.length;
        if (total > max) {
          throw new ProviderError("SERVER", `malformed response: the response body passed ${max} bytes`, {
            providerCode: "invalid_response",
            retryable: false,
          });
        }
        controller.enqueue(chunk);
      },
    }),
  );
}
