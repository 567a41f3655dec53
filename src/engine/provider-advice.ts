import type { ProviderErrorCode } from "../providers/provider.js";

/**
 * What a person can do about a model request that failed for good. The provider's own message
 * says what went wrong; this says what to change, because a stopped run is only useful if the
 * next step is clear. Front ends that know more (the key variable in use) supply their own.
 */
export type ProviderAdvice = (code: ProviderErrorCode) => string | undefined;

const RESUME_LATER = "the provider or the connection is failing: resume this session later (harness resume)";

const GENERAL: Partial<Record<ProviderErrorCode, string>> = {
  AUTH: "check that the API key in the environment is valid and allowed to use this model",
  QUOTA:
    "the account's quota or credit is used up: check the plan and billing with the provider (waiting will not help)",
  INVALID_REQUEST: "the provider refused the request: check the model id and the model options",
  NOT_FOUND: "check the model id and the base URL",
  CONTEXT_WINDOW_EXCEEDED:
    "the conversation no longer fits the model's context window: start a new session with a narrower goal, or use a model with a larger context window",
  RATE_LIMIT: "the provider is rate limiting this key: wait, then resume this session (harness resume)",
  OVERLOADED: RESUME_LATER,
  SERVER: RESUME_LATER,
  TRANSPORT: RESUME_LATER,
  TIMEOUT: RESUME_LATER,
  EMPTY_RESPONSE: RESUME_LATER,
};

export const generalProviderAdvice: ProviderAdvice = (code) => GENERAL[code];
