import type { LoadedConfig } from "../config/load.js";
import { defaultProfile, modelProfiles } from "../config/sections.js";
import { closeMatches } from "../shared/suggest.js";
import { contextBudgetFor } from "./context-budget.js";
import { listModels } from "./model-listing.js";
import type { ModelCatalog, ModelChoice, ProfileRow } from "./models.js";
import type { RunFlags } from "./run-flags.js";
import { loadProvider } from "./setup.js";
import { UsageError } from "./usage-error.js";

/**
 * The models a chat may switch to (/model): the user's configured profiles, or another model id
 * of the profile in use. A scripted chat has no other model to switch to.
 */
export class ConfiguredModels implements ModelCatalog {
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

  /**
   * The models the provider `flags` talk to offers (GET /models, as `harness models` asks): the
   * listing `/model` shows and `/model ID` is checked against. Undefined for a scripted chat (no
   * provider to ask); rejects with why the provider could not be asked.
   */
  async offered(flags: RunFlags): Promise<string[] | undefined> {
    if (this.scripted) return undefined;
    // A copy: loadProvider records the default profile in the flags it is given.
    const { profile } = await loadProvider(undefined, { ...flags }, this.config, this.env);
    if (profile === undefined) throw new UsageError("no provider profile to ask");
    return listModels(profile, this.env);
  }

  /**
   * The model `name` names: a configured profile (whose own model, base URL and key variable then
   * apply), else a model id for the provider in use, which must be one the provider lists (a typo
   * is refused now, not at the next request); one that cannot list its models takes the id
   * unchecked, and a notice says so. Throws UsageError with what to do instead.
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
    const isProfile = modelProfiles(this.config)[name] !== undefined;
    const notices = isProfile ? [] : await this.#checkListed(name, current);
    // A window given for the old model is not the new one's: the profile or the table decides.
    const flags: RunFlags = isProfile
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

  /** A model id against the provider's list: refused when it is not there; what to say when none could be had. */
  async #checkListed(name: string, current: RunFlags): Promise<string[]> {
    const listed = await this.offered(current).then(
      (models) => ({ models: models ?? [] }),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    );
    if ("error" in listed) return [`"${name}" was not checked: the provider's model list: ${listed.error}`];
    if (listed.models.length === 0) return [`"${name}" was not checked: the provider listed no models`];
    if (listed.models.includes(name)) return [];
    const close = closeMatches(name, listed.models);
    throw new UsageError(
      `the provider does not list the model "${name}"` +
        (close.length > 0 ? ` (close: ${close.join(", ")})` : "") +
        "; nothing was switched (/model shows what it lists)",
    );
  }
}
