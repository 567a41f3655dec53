import type { ProviderAdvice } from "../engine/provider-advice.js";
import type { ModelPrices } from "../providers/config.js";
import type { ContextBudget } from "../providers/context-window.js";
import type { Provider } from "../providers/provider.js";
import type { RunFlags } from "./run-flags.js";

/** One configured model profile, as `harness models` and /model list it. */
export interface ProfileRow {
  name: string;
  provider: string;
  model: string;
  baseUrl?: string;
  default: boolean;
}

/** What a session needs to talk to another model: the provider and the run options that rebuild it. */
export interface ModelChoice {
  provider: Provider;
  flags: RunFlags;
  advice?: ProviderAdvice;
  prices?: ModelPrices;
  context: ContextBudget;
  notices: string[];
}

/** The models a session may switch to (its door's configured profiles and what their providers offer). */
export interface ModelCatalog {
  profiles(): ProfileRow[];
  offered(flags: RunFlags): Promise<string[] | undefined>;
  choose(name: string, flags: RunFlags): Promise<ModelChoice>;
}

export interface ModelListing {
  model: string;
  /** The profile in use, when the model came from one. */
  profile?: string;
  profiles: ProfileRow[];
  /** What the provider in use offers (what `/model ID` is checked against), or why that could not be listed. */
  offered?: { models: string[] } | { error: string };
}
