import type { ModelMessage, ToolSpec } from "../protocol/types.js";
import { CodedError } from "../shared/coded-error.js";
import type { JsonObject } from "../shared/json.js";

/** One model request: the journal's projection plus the frozen tool snapshot. */
export interface ModelRequest {
  messages: readonly ModelMessage[];
  tools: readonly ToolSpec[];
  /** Index of the reply being requested (number of replies already recorded). */
  step: number;
  /** Attempt number for this step, from 0. */
  attempt: number;
  /** Number of model attempts whose outcome is already recorded in the session. */
  ordinal: number;
  /**
   * A stable per-session value for the provider's prompt cache routing (OpenAI
   * `prompt_cache_key`): equal for every request of one session, so they reach the same cache.
   */
  cacheKey?: string | undefined;
  /**
   * The bytes of the images the messages carry, by SHA-256 (read from the session's artifacts
   * just before sending). An image whose bytes are missing is sent as a line saying so.
   */
  images?: ReadonlyMap<string, Uint8Array>;
  /** "compaction": a request without tools asking for a handoff summary (its text is the summary). */
  purpose?: "compaction";
}

/**
 * Identity of a model source. It is part of the session identity, so a resumed session
 * refuses a different one. Never contains secrets or absolute paths.
 */
export type ProviderIdentity = JsonObject & { kind: string };

/** The model as people name it: the model id, else the provider's kind and name. */
export function modelNameOf(identity: JsonObject): string {
  if (typeof identity.model === "string") return identity.model;
  const kind = typeof identity.kind === "string" ? identity.kind : "unknown";
  return typeof identity.name === "string" ? `${kind}:${identity.name}` : kind;
}

/**
 * The provider seam: a function from a request to a stream of protocol events. Events are
 * yielded as `unknown` because they are external input until the decoder has checked them.
 * Failures before or during the stream are thrown as `ProviderError`.
 */
export interface Provider {
  readonly identity: ProviderIdentity;
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<unknown>;
  /**
   * The provider a sub-agent labelled `label` (started by this provider's session) uses: the same
   * model; a scripted provider plays that sub-agent's own replies. Its identity must follow from
   * this one's and the label alone, the same on every call (a resumed sub-agent compares it).
   * Absent: the sub-agent uses this provider itself.
   */
  forAgent?(label: string): Provider;
}

/**
 * Every provider failure code, and whether waiting and sending the same request again may
 * succeed (the engine's retry budget decides how often). The one place that says so.
 */
const RETRYABLE = {
  AUTH: false,
  QUOTA: false,
  RATE_LIMIT: true,
  CONTEXT_WINDOW_EXCEEDED: false,
  INVALID_REQUEST: false,
  NOT_FOUND: false,
  SERVER: true,
  OVERLOADED: true,
  TRANSPORT: true,
  TIMEOUT: true,
  EMPTY_RESPONSE: true,
  SCRIPT_ERROR: false,
  CANCELLED: false,
} as const satisfies Record<string, boolean>;

export type ProviderErrorCode = keyof typeof RETRYABLE;

export interface ProviderErrorDetails {
  status?: number;
  providerCode?: string;
  requestId?: string;
  retryAfterMs?: number;
  retryable?: boolean;
}

/** A normalized provider failure. Messages must never contain keys or absolute paths. */
export class ProviderError extends CodedError<ProviderErrorCode> {
  override readonly name = "ProviderError";
  readonly retryable: boolean;
  readonly status?: number;
  readonly providerCode?: string;
  readonly requestId?: string;
  readonly retryAfterMs?: number;

  constructor(code: ProviderErrorCode, message: string, details: ProviderErrorDetails = {}) {
    super(code, message);
    this.retryable = details.retryable ?? RETRYABLE[code];
    if (details.status !== undefined) this.status = details.status;
    if (details.providerCode !== undefined) this.providerCode = details.providerCode;
    if (details.requestId !== undefined) this.requestId = details.requestId;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
  }
}
