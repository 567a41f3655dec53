import type { LoadedConfig } from "../../config/load.js";
import { defaultProfile, modelProfiles } from "../../config/sections.js";
import type { ProviderAdvice } from "../../engine/provider-advice.js";
import type { ModelPrices } from "../../providers/config.js";
import type { ContextBudget } from "../../providers/context-window.js";
import type { Provider } from "../../providers/provider.js";
import { listModels } from "../commands/models.js";
import { contextBudgetFor } from "../context-budget.js";
import type { RunFlags } from "../run-flags.js";
import { loadProvider } from "../setup.js";
import { UsageError } from "../usage-error.js";

/** One configured model profile, as `harness models` lists it. */
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

/**
 * The models a chat may switch to (/model): the user's configured profiles, or another model id
 * of the profile in use. A scripted chat has no other model to switch to.
 */
export class ModelCatalog {
  constructor(
    private readonly config: LoadedConfig,
    private readonly scripted: boolean,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  profiles(): ProfileRow[] {
    const chosenDefault = defaultProfile(this.config);
    return Object.entries(modelProfiles(this.config)).map(([name, profile]) => ({
      name,
      provider: profile.provider,
      model: profile.model,
      ...(profile.base_url !== undefined ? { baseUrl: profile.base_url } : {}),
      default: name === chosenDefault,
    }));
  }

  /** The models the profile's provider offers (GET /models), as `harness models` asks. */
  offered(profile: string): Promise<string[]> {
    const found = modelProfiles(this.config)[profile];
    if (found === undefined) return Promise.resolve([]);
    return listModels(found, this.env);
  }

  /**
   * The model `name` names: a configured profile (whose own model, base URL and key variable then
   * apply), else a model id for the provider in use. Throws UsageError with what to do instead.
   */
  async choose(name: string, current: RunFlags): Promise<ModelChoice> {
    if (this.scripted) {
      throw new UsageError(
        "this chat talks to a scripted model (--script): there is no other model to switch to; " +
          "start the chat with --profile NAME or --provider/--model to switch between models",
      );
    }
    const {
      provider: _provider,
      model: _model,
      baseUrl: _baseUrl,
      apiKeyEnv: _apiKeyEnv,
      profile: _profile,
      contextWindow: _contextWindow,
      ...rest
    } = current;
    // A window given for the old model is not the new one's: the profile or the table decides.
    const flags: RunFlags =
      modelProfiles(this.config)[name] !== undefined
        ? { ...rest, profile: name }
        : {
            ...rest,
            ...(current.profile !== undefined ? { profile: current.profile } : {}),
            ...(current.provider !== undefined ? { provider: current.provider } : {}),
            ...(current.baseUrl !== undefined ? { baseUrl: current.baseUrl } : {}),
            ...(current.apiKeyEnv !== undefined ? { apiKeyEnv: current.apiKeyEnv } : {}),
            model: name,
          };
    const model = await loadProvider(undefined, flags, this.config, this.env);
    const notices: string[] = [];
    const context = contextBudgetFor(flags, model.profile, notices);
    return {
      provider: model.provider,
      flags,
      ...(model.advice ? { advice: model.advice } : {}),
      ...(model.profile?.prices ? { prices: model.profile.prices } : {}),
      context,
      notices,
    };
  }
}
