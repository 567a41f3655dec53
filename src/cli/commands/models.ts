import { defaultProfile, modelProfiles } from "../../config/sections.js";
import { loadConfigForCli } from "../../session/governance.js";
import { listModels } from "../../session/model-listing.js";
import { UsageError } from "../../session/usage-error.js";
import { escapeForTerminal } from "../../shared/terminal-text.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";

const HELP = `Usage: harness models [--profile NAME] [--json]

List your configured model profiles (the "models" section of your config; * marks
default_profile), then the models the provider of --profile NAME (else the default profile)
offers, asked with GET BASE_URL/models (openai-compatible, openai, anthropic; http-json has no
listing). The key is read from the profile's api_key_env or the provider's usual variable.
--json prints {profiles: [{name, provider, model, base_url, default}], listed: {profile, models} | null}.`;

const OPTIONS = {
  profile: { type: "string" },
  json: { type: "boolean" },
  workspace: { type: "string", short: "w" },
} as const;

/** `GET /models` in both dialects: `{data: [{id}]}` (Anthropic adds display_name). */

export const modelsCommand = {
  help: HELP,
  options: OPTIONS,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, OPTIONS);
    if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
    const config = await loadConfigForCli(values.workspace ?? process.cwd());
    const profiles = modelProfiles(config);
    const chosenDefault = defaultProfile(config);
    const name = values.profile ?? chosenDefault;
    if (values.profile !== undefined && !profiles[values.profile]) {
      const names = Object.keys(profiles);
      throw new UsageError(
        `no model profile "${values.profile}" in your config${names.length ? ` (profiles: ${names.join(", ")})` : " (create one with: harness init)"}`,
      );
    }
    const listed =
      name !== undefined && profiles[name]
        ? { profile: name, models: await listModels(profiles[name]) }
        : null;
    const rows = Object.entries(profiles).map(([key, p]) => ({
      name: key,
      provider: p.provider,
      model: p.model,
      base_url: p.base_url ?? null,
      default: key === chosenDefault,
    }));
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ profiles: rows, listed })}\n`);
      return EXIT.ok;
    }
    if (rows.length === 0)
      process.stdout.write("no model profiles configured (create one with: harness init)\n");
    for (const row of rows) {
      process.stdout.write(
        `${row.default ? "*" : " "} ${escapeForTerminal(row.name)}  ${row.provider}  ${escapeForTerminal(row.model)}${row.base_url ? `  ${escapeForTerminal(row.base_url)}` : ""}\n`,
      );
    }
    if (listed) {
      process.stdout.write(`\nmodels offered to profile ${escapeForTerminal(listed.profile)}:\n`);
      for (const id of listed.models) process.stdout.write(`  ${escapeForTerminal(id)}\n`);
    }
    return EXIT.ok;
  },
};
