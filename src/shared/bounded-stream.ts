/**
 * Bounds on what a network peer can make harness hold. An event-stream parser keeps an unfinished
 * line and event in memory, and an HTTP client library reads a plain body into one string, so a
 * peer that never ends an event (`data: ` and a gigabyte) or answers with a gigabyte of JSON grew
 * harness by gigabytes. These count as the bytes arrive and fail with the caller's error instead.
 */

/** Makes the error a bound raises; `what` says which bound was passed, for the message. */
export type TooLarge = (what: string) => Error;

const LF = 10;
const CR = 13;

/**
 * Counts what arrived since the last blank line (an event boundary) and throws once that passes
 * `max`. `\r` is not counted as a line end, so a stream with bare-CR line ends is measured as one
 * event: still bounded, merely refused sooner.
 */
export class EventSizeGuard {
  #sinceBoundary = 0;
  #lineLength = 0;

  constructor(
    private readonly max: number,
    private readonly tooLarge: TooLarge,
  ) {}

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
      throw this.tooLarge(`the stream sent more than ${this.max} characters without completing an event`);
    }
  }
}

/** A body passed through a check of each chunk; the stream errors with what the check throws. */
function checked(
  body: ReadableStream<Uint8Array>,
  check: (chunk: Uint8Array) => void,
): ReadableStream<Uint8Array> {
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        check(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
}

/** An event stream's body whose events are at most `max` bytes. */
export function boundedEventStream(
  body: ReadableStream<Uint8Array>,
  max: number,
  tooLarge: TooLarge,
): ReadableStream<Uint8Array> {
  const guard = new EventSizeGuard(max, tooLarge);
  return checked(body, (chunk) => guard.feed(chunk));
}

/** Any other body, at most `max` bytes as a whole. */
export function boundedBody(
  body: ReadableStream<Uint8Array>,
  max: number,
  tooLarge: TooLarge,
): ReadableStream<Uint8Array> {
  let total = 0;
  return checked(body, (chunk) => {
    total += chunk.length;
    if (total > max) throw tooLarge(`the response body passed ${max} bytes`);
  });
}

/** A fetch Response with its body bounded: per event for an event stream, as a whole otherwise. */
export function boundedResponse(response: Response, max: number, tooLarge: TooLarge): Response {
  if (response.body === null) return response;
  const type = response.headers.get("content-type") ?? "";
  const events = type.toLowerCase().includes("text/event-stream");
  const body = events
    ? boundedEventStream(response.body, max, tooLarge)
    : boundedBody(response.body, max, tooLarge);
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
