import { createRequire } from "node:module";
import { z } from "zod";

type Yaml = typeof import("yaml");
let yaml: Yaml | undefined;

/**
 * The YAML parser (about 250 KB of code) is required on the first front matter, not at start:
 * most sessions have no skill or command files. Required rather than bundled, since parsing is
 * synchronous and the CLI bundle's lazy parts are reached through import().
 */
function parseYaml(text: string, options: { maxAliasCount: number; prettyErrors: boolean }): unknown {
  yaml ??= createRequire(import.meta.url)("yaml") as Yaml;
  return yaml.parse(text, options);
}

/**
 * A Markdown file with an optional YAML front matter block (`---` lines): what SKILL.md files and
 * command templates are. The YAML is parsed as data only (no custom tags, bounded aliases); what it
 * says is checked by the caller's schema.
 */
export interface FrontMatter {
  data: unknown;
  body: string;
}

export class FrontMatterError extends Error {
  override readonly name = "FrontMatterError";
}

export function splitFrontMatter(text: string): FrontMatter {
  const normalized = text.replace(/^\uFEFF/, "").replaceAll("\r\n", "\n");
  if (!normalized.startsWith("---\n")) return { data: undefined, body: normalized };
  const end = normalized.indexOf("\n---", 3);
  if (end === -1) throw new FrontMatterError("the front matter opened by --- is never closed");
  const yaml = normalized.slice(4, end + 1);
  const rest = normalized.slice(end + 4);
  const body = rest.startsWith("\n") ? rest.slice(1) : rest;
  let data: unknown;
  try {
    data = parseYaml(yaml, { maxAliasCount: 10, prettyErrors: false });
  } catch (error) {
    throw new FrontMatterError(
      `the front matter is not valid YAML (${(error as Error).message.split("\n")[0]})`,
    );
  }
  return { data, body };
}

/** A skill's name: lowercase letters, digits and single hyphens, at most 64 (and its folder's name). */
export const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** The Agent Skills front matter; unknown keys are kept out, not refused (other agents add their own). */
export const skillFrontMatter = z.object({
  name: z.string().max(64).regex(SKILL_NAME, "lowercase letters, digits and hyphens"),
  description: z.string().min(1).max(1024),
  license: z.string().optional(),
  compatibility: z.string().max(500).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  "allowed-tools": z.union([z.string(), z.array(z.string())]).optional(),
});
export type SkillFrontMatter = z.infer<typeof skillFrontMatter>;

/** A command template's optional front matter. */
export const commandFrontMatter = z
  .object({
    description: z.string().max(1024).optional(),
    "argument-hint": z.string().max(200).optional(),
  })
  .optional();
