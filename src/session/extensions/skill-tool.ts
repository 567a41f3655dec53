import { z } from "zod";
import { SKILL_TOOL } from "../../engine/skills.js";
import { sha256Hex } from "../../shared/hash.js";
import { once } from "../../shared/lazy-record.js";
import { ToolError } from "../../tools/errors.js";
import { INPUT_SCHEMAS } from "../../tools/input-schemas.generated.js";
import { type AnyTool, defineTool, type ToolOutput } from "../../tools/tool.js";
import type { SkillEntry } from "./discover.js";
import { folderDigest } from "./folder-digest.js";

/** Most files of a skill's folder listed when it is activated (it may read the rest itself). */
const LISTED_FILES = 50;

const input = once(() => z.strictObject({ name: z.string().min(1).max(64) }));

/**
 * `skill {name}`: progressive disclosure. The model is offered each usable skill's name and
 * description up front (this tool's description); activating one returns its SKILL.md body and
 * where its other files are (read with the ordinary tools; its scripts run only through `shell`,
 * sandboxed under the session's policy). The folder is hashed again first: a skill changed since
 * the session found (and the user approved) it is refused. The engine journals the activation
 * (`skill.activated`) from the result's data; its `allowed-tools` then narrow the turn's calls.
 */
export function createSkillTool(skills: readonly SkillEntry[]): AnyTool {
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  const listing = skills
    .map((skill) => `- ${skill.name}: ${skill.description.replaceAll("\n", " ")}`)
    .join("\n");
  const activate = async (args: z.output<ReturnType<typeof input>>): Promise<ToolOutput> => {
    const skill = byName.get(args.name);
    if (skill === undefined) {
      throw new ToolError(
        "SEMANTIC_VALIDATION_ERROR",
        `no skill named "${args.name}"; the skills are: ${[...byName.keys()].join(", ")}`,
      );
    }
    let now: string;
    try {
      now = folderDigest(skill.dir).digest;
    } catch {
      now = "";
    }
    if (now !== skill.digest) {
      throw new ToolError(
        "SEMANTIC_VALIDATION_ERROR",
        `skill "${skill.name}" changed since this session found it; it is not loaded (a project skill needs a new approval: harness plugins approve ${skill.name})`,
      );
    }
    const where =
      skill.workspaceDir !== undefined
        ? `Its folder is ${skill.workspaceDir}/ in the workspace: read its files with read_file; run its scripts only with the shell tool.`
        : `Its folder is ${skill.shown} (outside the workspace: the file tools reach only workspace files).`;
    const files = skill.files.filter((file) => file !== "SKILL.md");
    const fileLines =
      files.length === 0
        ? ""
        : `\nFiles in it:\n${files
            .slice(0, LISTED_FILES)
            .map((file) => `- ${file}`)
            .join(
              "\n",
            )}${files.length > LISTED_FILES ? `\n- ... and ${files.length - LISTED_FILES} more` : ""}`;
    const narrowing =
      skill.allowedTools !== undefined
        ? `\nWhile this skill is active (until the turn ends) only these calls may be made: ${skill.allowedTools.join(" ") || "(none)"}; the session's own permissions still apply.`
        : "";
    return {
      summary: `activated skill ${skill.name} (${skill.source})`,
      content: `Skill "${skill.name}" (${skill.source}, sha256 ${skill.digest}). ${where}${narrowing}${fileLines}\n<skill>\n${skill.body}\n</skill>`,
      data: {
        skill: skill.name,
        digest: skill.digest,
        source: skill.source,
        ...(skill.allowedTools !== undefined ? { allowed_tools: skill.allowedTools } : {}),
        text: skill.body,
        body_sha256: sha256Hex(skill.body),
      },
    };
  };
  return defineTool({
    name: SKILL_TOOL,
    description:
      "Activate a skill: a folder of instructions (and sometimes scripts or reference files) for a kind of task. " +
      "When a task matches a skill's description, activate it first and follow what it says. The skills:\n" +
      listing,
    // The surface's identity covers what is offered: a skill added, removed or changed is a new version.
    version: sha256Hex(skills.map((skill) => `${skill.name} ${skill.digest}`).join("\n")).slice(0, 16),
    get input() {
      return input();
    },
    modelSchema: INPUT_SCHEMAS.skill,
    effect: "read_only",
    idempotency: "idempotent",
    timeoutMs: 10_000,
    resources: () => ({ read: [], write: [] }),
    concurrencySafe: () => true,
    reconcile: activate,
    execute: activate,
  }) as AnyTool;
}
