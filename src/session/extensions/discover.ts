import { lstatSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { basename, join, relative, sep } from "node:path";
import { z } from "zod";
import { displayPath } from "../../config/load.js";
import { sha256Hex } from "../../shared/hash.js";
import { allowedToolRules } from "./allowed-tools.js";
import { type FolderDigest, FolderTooLarge, folderDigest } from "./folder-digest.js";
import {
  commandFrontMatter,
  FrontMatterError,
  SKILL_NAME,
  skillFrontMatter,
  splitFrontMatter,
} from "./frontmatter.js";
import { type ExtensionKind, judgeExtension, type RecordedApprovals, type TrustVerdict } from "./trust.js";

/**
 * What users bring: Agent Skills (`NAME/SKILL.md` folders), command templates (`NAME.md`) and
 * plugins (a folder with `plugin.json` bundling skills and commands), from the user's folders
 * (next to the user config; trusted) and the project's (`.agents/...`; untrusted until approved
 * by digest). The folders other agents use are read too, never written. Everything is text for
 * the model; nothing found here is run by harness.
 */

/** The largest SKILL.md or command template read; a larger one is refused with the limit named. */
export const EXTENSION_FILE_MAX_BYTES = 256 * 1024;
const COMMAND_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export type Scope = "user" | "project";

interface Found {
  kind: ExtensionKind;
  name: string;
  scope: Scope;
  /** `user`, `project`, or `plugin NAME`. */
  source: string;
  /** Where it is, for people: `~/...` or workspace-relative. */
  shown: string;
  digest: string;
  trust: TrustVerdict;
  /** Set when it cannot be used at all (bad front matter, too large...). */
  problem?: string;
}

export interface SkillEntry extends Found {
  kind: "skill";
  description: string;
  /** The folder, absolute. */
  dir: string;
  /** Workspace-relative folder of a project skill (read_file reaches its files). */
  workspaceDir?: string;
  body: string;
  allowedTools?: string[];
  files: string[];
}

export interface CommandEntry extends Found {
  kind: "command";
  description?: string;
  template: string;
}

export interface PluginEntry extends Found {
  kind: "plugin";
  description?: string;
  /** What its manifest declares beyond skills and commands (hooks, MCP servers). */
  declared: string[];
  /** The folder, absolute (its digest is judged again before a server of it starts). */
  dir: string;
  /** The manifest, absolute: a hook's relative file words resolve against its folder. */
  manifest: string;
  /** The manifest's `hooks` and `mcpServers` as written: parsed where they are loaded (plugin-parts.ts). */
  hooks?: unknown;
  mcpServers?: unknown;
}

export interface Extensions {
  skills: SkillEntry[];
  commands: CommandEntry[];
  plugins: PluginEntry[];
}

export interface DiscoverOptions {
  /** The workspace's real path. */
  workspace: string;
  /** The user's harness folder (the directory of the user config). */
  userDir: string;
  home: string;
  approvals: RecordedApprovals;
  /** False: the project's items are not considered at all (a server client's workspace). */
  project?: boolean;
}

const pluginManifest = z.object({
  name: z.string().regex(COMMAND_NAME).optional(),
  description: z.string().max(1024).optional(),
  version: z.string().optional(),
  skills: z.string().optional(),
  commands: z.string().optional(),
  hooks: z.unknown().optional(),
  mcpServers: z.unknown().optional(),
  mcp_servers: z.unknown().optional(),
});

export function discoverExtensions(options: DiscoverOptions): Extensions {
  const found: Extensions = { skills: [], commands: [], plugins: [] };
  const roots: { scope: Scope; base: string }[] = [
    { scope: "user", base: options.userDir },
    ...(options.project === false
      ? []
      : [{ scope: "project" as const, base: join(options.workspace, ".agents") }]),
    // Other agents' folders, read only.
    { scope: "user", base: join(options.home, ".claude") },
    ...(options.project === false
      ? []
      : [{ scope: "project" as const, base: join(options.workspace, ".claude") }]),
  ];
  const context = (
    scope: Scope,
    source: string,
    trust: (kind: ExtensionKind, name: string, digest: string) => TrustVerdict,
  ) => ({
    scope,
    source,
    trust,
    options,
  });
  for (const { scope, base } of roots) {
    const trust = (kind: ExtensionKind, name: string, digest: string): TrustVerdict =>
      scope === "user"
        ? { state: "user" }
        : judgeExtension(options.approvals, { kind, name, digest }, options.workspace);
    const ctx = context(scope, scope, trust);
    found.skills.push(...skillsIn(join(base, "skills"), ctx));
    found.commands.push(...commandsIn(join(base, "commands"), ctx));
    for (const plugin of pluginsIn(join(base, "plugins"), ctx)) {
      found.plugins.push(plugin.entry);
      if (plugin.entry.problem !== undefined) continue;
      // A plugin's parts are trusted exactly as the plugin is.
      const inherited = () => plugin.entry.trust;
      const inner = context(scope, `plugin ${plugin.entry.name}`, inherited);
      found.skills.push(...skillsIn(plugin.skills, inner));
      found.commands.push(...commandsIn(plugin.commands, inner));
    }
  }
  return {
    skills: firstByName(found.skills),
    commands: firstByName(found.commands),
    plugins: firstByName(found.plugins),
  };
}

/** One item per name: the first found (the user's before the project's, harness's folders first). */
function firstByName<T extends Found>(items: T[]): T[] {
  const seen = new Set<string>();
  return items.filter((item) => !seen.has(item.name) && seen.add(item.name));
}

/** Usable now: no problem and trusted (the user's, or approved at this digest). */
export function usable(item: Found): boolean {
  return item.problem === undefined && (item.trust.state === "user" || item.trust.state === "approved");
}

interface ScanContext {
  scope: Scope;
  source: string;
  trust(kind: ExtensionKind, name: string, digest: string): TrustVerdict;
  options: DiscoverOptions;
}

function shownPath(path: string, ctx: ScanContext): string {
  const inWorkspace = relative(ctx.options.workspace, path);
  if (ctx.scope === "project" && !inWorkspace.startsWith("..")) return inWorkspace.split(sep).join("/");
  return displayPath(path, ctx.options.home);
}

/** Entries of a folder that are real folders or files (a link is never followed into). */
function entries(dir: string, ctx: ScanContext): { name: string; path: string; kind: "dir" | "file" }[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  // A project folder must be the workspace's own, not a link out of it.
  if (ctx.scope === "project" && !inside(dir, ctx.options.workspace)) return [];
  const out: { name: string; path: string; kind: "dir" | "file" }[] = [];
  for (const name of names) {
    const path = join(dir, name);
    try {
      const stat = lstatSync(path);
      if (stat.isDirectory()) out.push({ name, path, kind: "dir" });
      else if (stat.isFile()) out.push({ name, path, kind: "file" });
    } catch {}
  }
  return out;
}

function inside(path: string, root: string): boolean {
  try {
    const real = realpathSync(path);
    return real === root || real.startsWith(`${root}${sep}`);
  } catch {
    return false;
  }
}

/** The text of bytes already read (and hashed): bounded, and UTF-8 or refused. */
function decodeText(bytes: Buffer): string {
  if (bytes.byteLength > EXTENSION_FILE_MAX_BYTES)
    throw new FrontMatterError(`${bytes.byteLength} bytes, over the ${EXTENSION_FILE_MAX_BYTES}-byte limit`);
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  return text;
}

function skillsIn(dir: string, ctx: ScanContext): SkillEntry[] {
  const skills: SkillEntry[] = [];
  for (const folder of entries(dir, ctx)) {
    if (folder.kind !== "dir") continue;
    const file = join(folder.path, "SKILL.md");
    const shown = shownPath(folder.path, ctx);
    const base: Omit<SkillEntry, "trust" | "digest"> = {
      kind: "skill",
      name: folder.name,
      scope: ctx.scope,
      source: ctx.source,
      shown,
      description: "",
      dir: folder.path,
      ...(ctx.scope === "project"
        ? { workspaceDir: relative(ctx.options.workspace, folder.path).split(sep).join("/") }
        : {}),
      body: "",
      files: [],
    };
    let digest: FolderDigest;
    try {
      lstatSync(file);
    } catch {
      continue;
    }
    try {
      digest = folderDigest(folder.path, "SKILL.md");
    } catch (error) {
      const problem =
        error instanceof FolderTooLarge ? `the folder holds ${error.message}` : "the folder cannot be read";
      skills.push({ ...base, digest: "0".repeat(64), trust: { state: "none" }, problem });
      continue;
    }
    const entry: SkillEntry = {
      ...base,
      digest: digest.digest,
      files: digest.files,
      trust: ctx.trust("skill", folder.name, digest.digest),
    };
    try {
      // The body shown is the SKILL.md the digest hashed (a link or a vanished file has none).
      if (digest.kept === undefined)
        throw new FrontMatterError("not a regular file (links are not followed)");
      const { data, body } = splitFrontMatter(decodeText(digest.kept));
      const meta = skillFrontMatter.safeParse(data ?? {});
      if (!meta.success)
        throw new FrontMatterError(
          `front matter: ${meta.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`,
        );
      if (meta.data.name !== folder.name)
        throw new FrontMatterError(`its name "${meta.data.name}" is not its folder's name "${folder.name}"`);
      entry.description = meta.data.description;
      entry.body = body;
      const field = meta.data["allowed-tools"];
      if (field !== undefined) {
        const rules = allowedToolRules(field, `skill ${folder.name}`);
        if ("problem" in rules) throw new FrontMatterError(`allowed-tools: ${rules.problem}`);
        entry.allowedTools = rules.rules;
      }
    } catch (error) {
      if (!(error instanceof FrontMatterError) && !(error instanceof TypeError)) throw error;
      entry.problem = `SKILL.md: ${error.message}`;
    }
    if (!SKILL_NAME.test(folder.name))
      entry.problem ??= "its folder's name is not a skill name (lowercase letters, digits, hyphens)";
    skills.push(entry);
  }
  return skills;
}

function commandsIn(dir: string, ctx: ScanContext): CommandEntry[] {
  const commands: CommandEntry[] = [];
  for (const file of entries(dir, ctx)) {
    if (file.kind !== "file" || !file.name.endsWith(".md")) continue;
    const name = basename(file.name, ".md");
    if (!COMMAND_NAME.test(name)) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(file.path);
    } catch {
      continue;
    }
    const digest = sha256Hex(bytes);
    const entry: CommandEntry = {
      kind: "command",
      name,
      scope: ctx.scope,
      source: ctx.source,
      shown: shownPath(file.path, ctx),
      digest,
      trust: ctx.trust("command", name, digest),
      template: "",
    };
    try {
      // The template is the bytes the digest hashed, not a second read.
      const { data, body } = splitFrontMatter(decodeText(bytes));
      const meta = commandFrontMatter.safeParse(data);
      if (!meta.success)
        throw new FrontMatterError("front matter: description and argument-hint must be text");
      if (meta.data?.description !== undefined) entry.description = meta.data.description;
      entry.template = body;
    } catch (error) {
      if (!(error instanceof FrontMatterError) && !(error instanceof TypeError)) throw error;
      entry.problem = error.message;
    }
    commands.push(entry);
  }
  return commands;
}

function pluginsIn(
  dir: string,
  ctx: ScanContext,
): { entry: PluginEntry; skills: string; commands: string }[] {
  const plugins: { entry: PluginEntry; skills: string; commands: string }[] = [];
  for (const folder of entries(dir, ctx)) {
    if (folder.kind !== "dir" || !COMMAND_NAME.test(folder.name)) continue;
    const manifestPath = [
      join(folder.path, "plugin.json"),
      join(folder.path, ".claude-plugin", "plugin.json"),
    ].find((path) => {
      try {
        return lstatSync(path).isFile();
      } catch {
        return false;
      }
    });
    if (manifestPath === undefined) continue;
    const entry: PluginEntry = {
      kind: "plugin",
      name: folder.name,
      scope: ctx.scope,
      source: ctx.source,
      shown: shownPath(folder.path, ctx),
      digest: "0".repeat(64),
      trust: { state: "none" },
      declared: [],
      dir: folder.path,
      manifest: manifestPath,
    };
    let skills = join(folder.path, "skills");
    let commands = join(folder.path, "commands");
    try {
      // The manifest parsed (its hooks and MCP servers) is the one the digest hashed.
      const { digest, kept } = folderDigest(
        folder.path,
        relative(folder.path, manifestPath).split(sep).join("/"),
      );
      entry.digest = digest;
      entry.trust = ctx.trust("plugin", folder.name, digest);
      if (kept === undefined)
        throw new FrontMatterError("plugin.json: not a regular file (links are not followed)");
      const manifest = pluginManifest.safeParse(JSON.parse(decodeText(kept)));
      if (!manifest.success) throw new FrontMatterError("plugin.json: not a plugin manifest");
      if (manifest.data.description !== undefined) entry.description = manifest.data.description;
      if (manifest.data.hooks !== undefined) {
        entry.declared.push("hooks");
        entry.hooks = manifest.data.hooks;
      }
      const servers = manifest.data.mcpServers ?? manifest.data.mcp_servers;
      if (servers !== undefined) {
        entry.declared.push("MCP servers");
        entry.mcpServers = servers;
      }
      // Parts stay inside the plugin's folder.
      const within = (part: string | undefined, fallback: string) => {
        if (part === undefined) return fallback;
        const path = join(folder.path, part);
        if (relative(folder.path, path).startsWith(".."))
          throw new FrontMatterError(`plugin.json: ${part} is outside the plugin`);
        return path;
      };
      skills = within(manifest.data.skills, skills);
      commands = within(manifest.data.commands, commands);
    } catch (error) {
      entry.problem =
        error instanceof FolderTooLarge
          ? `the folder holds ${error.message}`
          : error instanceof SyntaxError
            ? "plugin.json is not JSON"
            : error instanceof Error
              ? error.message
              : "cannot be read";
    }
    plugins.push({ entry, skills, commands });
  }
  return plugins;
}
