import { DEFAULT_OUTPUT_LIMITS } from "../protocol/limits.js";
import { EventSizeGuard as Guard, type TooLarge } from "../shared/bounded-stream.js";
import { ProviderError } from "./provider.js";

/**
 * The most a provider's stream may deliver between two event boundaries (blank lines), and the
 * most any other response body may hold: a whole reply's worth (`maxStreamChars`). An endpoint
 * that never ended a line (`data: ` and a gigabyte) grew harness to 1.4 GB, and an error body of a
 * gigabyte to 2.5 GB; no event or body this large could be a reply the decoder would accept.
 */
export const MAX_SSE_EVENT_SIZE = DEFAULT_OUTPUT_LIMITS.maxStreamChars;

/** Past a bound the request fails as a malformed response, not retried (the endpoint would send it again). */
export const providerTooLarge: TooLarge = (what) =>
  new ProviderError("SERVER", `malformed response: ${what}`, {
    providerCode: "invalid_response",
    retryable: false,
  });

/** The provider's event-size guard (see shared/bounded-stream.ts). */
export class EventSizeGuard extends Guard {
  constructor(max: number = MAX_SSE_EVENT_SIZE) {
    super(max, providerTooLarge);
  }
}
