import { z } from "zod";
import { DEFAULT_KEY_ENV, type ModelProfile } from "../providers/config.js";
import { ANTHROPIC_DEFAULT_BASE_URL, OPENAI_DEFAULT_BASE_URL } from "../providers/endpoint.js";
import { UsageError } from "./usage-error.js";

const listing = z.object({ data: z.array(z.object({ id: z.string() }).loose()) }).loose();

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
