import { z } from "zod";
import { defaultProfile, modelProfiles } from "../../config/sections.js";
import { DEFAULT_KEY_ENV, type ModelProfile } from "../../providers/config.js";
import { ANTHROPIC_DEFAULT_BASE_URL, OPENAI_DEFAULT_BASE_URL } from "../../providers/endpoint.js";
import { loadConfigForCli } from "../../session/governance.js";
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
const listing = z.object({ data: z.array(z.object({ id: z.string() }).loose()) }).loose();

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

/** The models a profile's provider offers (GET BASE_URL/models), sorted; UsageError saying what failed. */
export async function listModels(
  profile: ModelProfile,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  if (profile.provider === "http-json") throw new UsageError("an http-json provider has no model listing");
  const base =
    profile.base_url ??
    (profile.provider === "anthropic" ? ANTHROPIC_DEFAULT_BASE_URL : OPENAI_DEFAULT_BASE_URL);
  const url = `${base.replace(/\/+$/, "")}/models`;
  const variable = profile.api_key_env ?? DEFAULT_KEY_ENV[profile.provider];
  const key = variable === undefined ? undefined : env[variable];
  const headers: Record<string, string> =
    profile.provider === "anthropic"
      ? { "anthropic-version": "2023-06-01", ...(key ? { "x-api-key": key } : {}) }
      : key
        ? { authorization: `Bearer ${key}` }
        : {};
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.timeout(15_000) });
  } catch {
    throw new UsageError(`cannot connect to ${url}: is the server running? (check base_url in the profile)`);
  }
  if (!response.ok) {
    const why =
      response.status === 401 || response.status === 403
        ? ` (check the key in ${variable ?? "api_key_env"})`
        : "";
    throw new UsageError(`GET ${url} answered HTTP ${response.status}${why}`);
  }
  const parsed = listing.safeParse(await response.json().catch(() => undefined));
  if (!parsed.success) throw new UsageError(`GET ${url} did not answer with a model list ({data: [{id}]})`);
  return parsed.data.data.map((entry) => entry.id).sort();
}
