import type { ModelProfile } from "../providers/config.js";
import {
  type ContextBudget,
  ContextBudgetError,
  resolveContextBudget,
  tokenCountSchema,
  UNKNOWN_MODEL_WINDOW,
} from "../providers/context-window.js";
import type { RunFlags } from "./run-flags.js";
import { UsageError } from "./usage-error.js";

/**
 * The session's context window and reply reserve: `--context-window` (given now or recorded
 * when the session started) beats the profile's `context_window`, which beats the table of
 * known models. A model the table does not know gets a conservative window, and the user is told.
 */
export function contextBudgetFor(
  flags: RunFlags,
  profile: ModelProfile | undefined,
  notices: string[],
): ContextBudget {
  const flag = flags.contextWindow;
  if (flag !== undefined && !tokenCountSchema.safeParse(flag).success) {
    throw new UsageError(
      `the recorded --context-window (${String(flag)}) is not a token count; pass --context-window TOKENS`,
    );
  }
  try {
    const budget = resolveContextBudget({ flag, profile, model: profile?.model });
    if (budget.source === "unknown_model" && profile !== undefined) {
      notices.push(
        `the context window of model "${profile.model}" is not known; assuming ${UNKNOWN_MODEL_WINDOW} tokens ` +
          "(set context_window in the profile or pass --context-window TOKENS)",
      );
    }
    return budget;
  } catch (error) {
    if (error instanceof ContextBudgetError) throw new UsageError(error.message);
    throw error;
  }
}
