import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { McpConfigError, type McpServerDefinition, parseMcpServers } from "../mcp/config.js";
import { type ModelProfile, modelProfilesSchema } from "../providers/config.js";
import { parseRule, RuleSyntaxError } from "../rules/grammar.js";
import { readPathProblem } from "../sandbox/host-view.js";
import { once } from "../shared/lazy-record.js";
import { ConfigError } from "./errors.js";
import type { LoadedConfig } from "./load.js";
import type { CredentialSetting } from "./schema.js";

// Each section's schema is built the first time a config has that section (zod builds a schema's
// whole object graph when it is declared; most runs have none of them).
const sandboxSection = once(() =>
  z.union([
    z.enum(["off", "workspace-write", "read-only"]),
    z.strictObject({
      profile: z.enum(["off", "workspace-write", "read-only"]),
      bwrap_path: z.string().min(1).optional(),
      /** Host paths the sandbox shows read-only (caches, toolchains under home). User config only. */
      read_paths: z.array(z.string().min(1)).optional(),
    }),
  ]),
);

const shellSection = once(() =>
  z.strictObject({
    pass_env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).optional(),
    allow_env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).optional(),
    default_timeout_ms: z.number().int().positive().optional(),
    max_timeout_ms: z.number().int().positive().optional(),
  }),
);

/** How host-run commands of one kind (acceptance checks, command hooks) are confined. */
const processSection = once(() =>
  z.strictObject({
    sandbox: z.enum(["off", "workspace-write", "read-only"]).optional(),
    pass_env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).optional(),
  }),
);

export type ProcessSetting = z.infer<ReturnType<typeof processSection>>;

export interface SandboxSetting {
  profile: "off" | "workspace-write" | "read-only";
  bwrapPath?: string;
  source: string;
}

export type ShellSetting = z.infer<ReturnType<typeof shellSection>>;

/**
 * Settings that can weaken isolation (sandbox off, secrets passed to commands) come only from
 * the user's own config or a project the user trusts; an untrusted project may only tighten.
 */
function trustedSources(loaded: LoadedConfig) {
  const sources = loaded.user ? [loaded.user] : [];
  if (loaded.project && loaded.projectTrusted) sources.push(loaded.project);
  return sources;
}

function parse<T>(schema: z.ZodType<T>, value: unknown, label: string, section: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ConfigError(label, `"${section}": ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export function sandboxSetting(loaded: LoadedConfig): SandboxSetting | undefined {
  let setting: SandboxSetting | undefined;
  for (const source of trustedSources(loaded)) {
    if (source.config.sandbox === undefined) continue;
    const value = parse(sandboxSection(), source.config.sandbox, source.label, "sandbox");
    setting =
      typeof value === "string"
        ? { profile: value, source: source.label }
        : {
            profile: value.profile,
            ...(value.bwrap_path ? { bwrapPath: value.bwrap_path } : {}),
            source: source.label,
          };
  }
  // An untrusted project may ask for a stricter profile, never a weaker one.
  const project = loaded.project;
  if (project && !loaded.projectTrusted && project.config.sandbox !== undefined) {
    const value = parse(sandboxSection(), project.config.sandbox, project.label, "sandbox");
    const profile = typeof value === "string" ? value : value.profile;
    if (profile === "read-only") setting = { profile, source: project.label };
  }
  return setting;
}

/**
 * The extra read-only paths the sandbox shows, from the USER config only: a repository must not
 * be able to widen what its own commands can read. `~/` means the user's home. A path that would
 * show credentials, sockets or a whole home is a config error.
 */
export function sandboxReadPaths(loaded: LoadedConfig, homedir: string): string[] {
  const user = loaded.user;
  if (user?.config.sandbox === undefined) return [];
  const value = parse(sandboxSection(), user.config.sandbox, user.label, "sandbox");
  if (typeof value === "string") return [];
  const paths: string[] = [];
  for (const [index, entry] of (value.read_paths ?? []).entries()) {
    const expanded = entry === "~" ? homedir : entry.startsWith("~/") ? join(homedir, entry.slice(2)) : entry;
    const problem = readPathProblem(expanded, [homedir]);
    if (problem !== undefined) {
      throw new ConfigError(
        user.label,
        `"sandbox.read_paths[${index}]" ${JSON.stringify(entry)}: ${problem}`,
      );
    }
    paths.push(resolve(expanded));
  }
  return paths;
}

export function shellSetting(loaded: LoadedConfig): ShellSetting {
  const merged: ShellSetting = {};
  for (const source of trustedSources(loaded)) {
    if (source.config.shell === undefined) continue;
    Object.assign(merged, parse(shellSection(), source.config.shell, source.label, "shell"));
  }
  return merged;
}

/**
 * The `acceptance` or `hook_commands` section. These commands run on the user's behalf after the
 * model worked (acceptance runs the model's code), so only the user config may loosen them: a
 * project config, trusted or not, is part of the repository and could be written by the model or
 * by whoever shipped the repository. A project section is ignored with a notice.
 */
export function processSetting(
  loaded: LoadedConfig,
  section: "acceptance" | "hook_commands",
): { setting: ProcessSetting; notice?: string } {
  const user = loaded.user;
  const setting =
    user?.config[section] === undefined
      ? {}
      : parse(processSection(), user.config[section], user.label, section);
  const project = loaded.project;
  if (project?.config[section] === undefined) return { setting };
  return {
    setting,
    notice: `${project.label}: "${section}" is ignored; only your user config can change how these commands run`,
  };
}

export function modelProfiles(loaded: LoadedConfig): Record<string, ModelProfile> {
  const profiles: Record<string, ModelProfile> = {};
  for (const source of trustedSources(loaded)) {
    if (source.config.models === undefined) continue;
    Object.assign(profiles, parse(modelProfilesSchema, source.config.models, source.label, "models"));
  }
  return profiles;
}

/**
 * What the workspace record leaves out (`record_exclude`). Only the user's config: an exclude in a
 * repository's config would hide changes to its own files from the record.
 */
export function recordExcludes(loaded: LoadedConfig): { excludes: string[]; notice?: string } {
  const excludes = [...(loaded.user?.config.record_exclude ?? [])];
  const project = loaded.project;
  if (project?.config.record_exclude === undefined) return { excludes };
  return {
    excludes,
    notice: `${project.label}: "record_exclude" is ignored; only your user config can exclude paths from the record`,
  };
}

/** The user's default model profile (harness init writes it); a project's config cannot choose your model. */
export function defaultProfile(loaded: LoadedConfig): string | undefined {
  return loaded.user?.config.default_profile;
}

/** The model profile the agent tool's children use instead of their parent's model (user config only). */
export function agentProfile(loaded: LoadedConfig): string | undefined {
  return loaded.user?.config.agent_profile;
}

/**
 * Per-tool timeout overrides. Trusted sources set them; an untrusted project may only shorten a
 * timeout, never lengthen it.
 */
export function toolTimeouts(loaded: LoadedConfig): Map<string, number> {
  const timeouts = new Map<string, number>();
  for (const source of trustedSources(loaded)) {
    for (const [tool, ms] of Object.entries(source.config.timeouts ?? {})) timeouts.set(tool, ms);
  }
  if (loaded.project && !loaded.projectTrusted) {
    for (const [tool, ms] of Object.entries(loaded.project.config.timeouts ?? {})) {
      const current = timeouts.get(tool);
      if (current === undefined || ms < current) timeouts.set(tool, Math.min(ms, current ?? ms));
    }
  }
  return timeouts;
}

/**
 * The MCP servers the configs define: the user's own, and the ones the project proposes. A
 * proposal is never started on the project's word, trusted project or not: only once the user
 * approved its exact definition (mcp/selection.ts). A bad definition is a ConfigError naming the
 * file, the server and the field.
 */
export function mcpServerSettings(loaded: LoadedConfig): {
  user: Record<string, McpServerDefinition>;
  proposed: Record<string, McpServerDefinition>;
} {
  const read = (source: LoadedConfig["user"]): Record<string, McpServerDefinition> => {
    if (source?.config.mcp_servers === undefined) return {};
    try {
      return parseMcpServers(source.config.mcp_servers, source.label);
    } catch (error) {
      if (!(error instanceof McpConfigError)) throw error;
      throw new ConfigError(source.label, error.message.slice(source.label.length + 2));
    }
  };
  return { user: read(loaded.user), proposed: read(loaded.project) };
}

const ruleList = (decision: "deny" | "ask") =>
  z.array(z.string().min(1)).superRefine((rules, context) => {
    for (const rule of rules) {
      try {
        parseRule(decision, rule, "server identity");
      } catch (error) {
        if (!(error instanceof RuleSyntaxError)) throw error;
        context.addIssue({ code: "custom", message: error.message });
      }
    }
  });

const serverSection = once(() =>
  z.strictObject({
    identities: z
      .record(
        z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "an identity name is letters, digits, '.', '_' or '-'"),
        z.strictObject({
          tools: z.string().min(1).optional(),
          deny: ruleList("deny").optional(),
          ask: ruleList("ask").optional(),
          see_all: z.boolean().optional(),
          host: z.boolean().optional(),
          workspaces: z
            .array(z.string().refine((p) => isAbsolute(p) && !p.includes("\0"), "an absolute directory path"))
            .optional(),
        }),
      )
      .optional(),
  }),
);

export type ServerIdentities = NonNullable<z.infer<ReturnType<typeof serverSection>>["identities"]>;

/**
 * `harness serve`'s identities (who may see what, which tools and rules their sessions get).
 * Only the user's config decides who the server's callers are; a project's section is ignored.
 */
export function serverIdentities(loaded: LoadedConfig): ServerIdentities {
  const user = loaded.user;
  if (user?.config.server === undefined) return {};
  return parse(serverSection(), user.config.server, user.label, "server").identities ?? {};
}

/**
 * The credentials the user config binds to hosts (`credentials`). Never a project's: a repository
 * must not be able to send the user's token to a host of its choosing.
 */
export function credentialSettings(loaded: LoadedConfig): Record<string, CredentialSetting> {
  return { ...(loaded.user?.config.credentials ?? {}) };
}
