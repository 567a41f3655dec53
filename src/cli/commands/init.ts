import { homedir } from "node:os";
import { createInterface } from "node:readline/promises";
import { userConfigPath } from "../../config/load.js";
import {
  DEFAULT_KEY_ENV,
  PROVIDER_KINDS,
  ProviderConfigError,
  parseProfile,
} from "../../providers/config.js";
import { UsageError } from "../../session/usage-error.js";
import { oneOf, parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { updateUserConfig } from "../user-config-file.js";

const HELP = `Usage: harness init [--provider NAME --model ID [--base-url URL] [--api-key-env VAR]] [--name PROFILE]

Create (or add to) your user config: a model profile, made the default_profile, so harness run
needs no --provider/--model. On a terminal it asks for what the flags do not give; without one
the flags are required. It never asks for a key: keys are read from the environment variable it
names (OPENAI_API_KEY, ANTHROPIC_API_KEY, or --api-key-env VAR). Every other key in the file is
kept. The file: $HARNESS_CONFIG, else ~/.config/harness/config.json.`;

const OPTIONS = {
  provider: { type: "string" },
  model: { type: "string" },
  "base-url": { type: "string" },
  "api-key-env": { type: "string" },
  name: { type: "string" },
} as const;

export const initCommand = {
  help: HELP,
  options: OPTIONS,
  async run(args: string[]): Promise<number> {
    const { values, positionals } = parse(args, OPTIONS);
    if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
    const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true;
    const rl = interactive ? createInterface({ input: process.stdin, output: process.stdout }) : undefined;
    const ask = async (question: string, given: string | undefined, fallback?: string) => {
      if (given !== undefined) return given;
      if (!rl) return fallback;
      const answer = (await rl.question(`${question}${fallback ? ` [${fallback}]` : ""}: `)).trim();
      return answer === "" ? fallback : answer;
    };
    try {
      const provider = oneOf(
        await ask(`provider (${PROVIDER_KINDS.join(", ")})`, values.provider, "openai-compatible"),
        "--provider",
        PROVIDER_KINDS,
      );
      const model = await ask("model id", values.model);
      if (provider === undefined || model === undefined || (!interactive && values.provider === undefined)) {
        throw new UsageError(
          "without a terminal, give the profile as flags: harness init --provider NAME --model ID",
        );
      }
      const needsUrl = provider === "openai-compatible" || provider === "http-json";
      const baseUrl = await ask(
        "base URL",
        values["base-url"],
        needsUrl ? "http://127.0.0.1:11434/v1" : undefined,
      );
      const keyEnv = values["api-key-env"] ?? DEFAULT_KEY_ENV[provider];
      const profile = {
        provider,
        model,
        ...(baseUrl ? { base_url: baseUrl } : {}),
        ...(values["api-key-env"] ? { api_key_env: values["api-key-env"] } : {}),
      };
      try {
        parseProfile(profile);
      } catch (error) {
        if (error instanceof ProviderConfigError) throw new UsageError(error.message);
        throw error;
      }
      const name = values.name ?? "default";
      const file = userConfigPath(process.env, homedir());
      await updateUserConfig(file, (config) => {
        const models = config.models ?? {};
        if (typeof models !== "object" || models === null || Array.isArray(models))
          throw new UsageError(`${file}: "models" must be an object; fix it first`);
        config.models = { ...(models as Record<string, unknown>), [name]: profile };
        config.default_profile = name;
      });
      process.stdout.write(`wrote profile "${name}" (${provider} ${model}) as default_profile to ${file}\n`);
      if (keyEnv !== undefined) {
        process.stdout.write(`set the key in the environment, never in the file: export ${keyEnv}=...\n`);
      }
      process.stdout.write('try it: harness models, then harness run "your goal"\n');
      return EXIT.ok;
    } finally {
      rl?.close();
    }
  },
};
