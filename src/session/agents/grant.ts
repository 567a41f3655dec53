import { z } from "zod";
import type { JsonObject } from "../../shared/json.js";
import type { EffectClass } from "../../tools/tool.js";
import type { RunFlags, ShellFlag, WriteFlag } from "../run-flags.js";

/** How much a mode lets a session do; a child gets the lesser of its parent's and what it asked. */
const WRITE_POWER: Record<WriteFlag, number> = { deny: 0, propose: 1, ask: 2, allow: 3 };
const SHELL_POWER: Record<ShellFlag, number> = { deny: 0, ask: 1, allow: 2 };

/** What a parent session may do, as far as a child's grant is concerned. */
export interface ParentPowers {
  /** The parent's effective options (what its policy and tools were built from). */
  flags: RunFlags;
  /** The parent's effective modes after its config files and flags. */
  write: WriteFlag;
  shell: ShellFlag;
  readOnly: boolean;
  /** The tools the parent is offered now, by name. */
  tools: readonly string[];
  /** The effect class of each MCP tool among them (`mcp__SERVER__TOOL`): what its grant turns on. */
  mcpEffects?: Readonly<Record<string, EffectClass>>;
}

/** What an `agent` call asks its child may do. */
export interface GrantRequest {
  tools?: readonly string[] | undefined;
  read_paths?: readonly string[] | undefined;
  edit_paths?: readonly string[] | undefined;
  write?: WriteFlag | undefined;
  shell?: ShellFlag | undefined;
  /** `shared` children read the parent's workspace and can never write it. */
  isolation: "copy" | "shared";
}

export interface Grant {
  /** The child's own options: its policy is built from them, then intersected with the parent's. */
  flags: RunFlags;
  /** Asked for and not granted, each said in a sentence the model reads. */
  notGranted: string[];
  /** What the parent's journal records (`agent.started.grant`). */
  recorded: JsonObject;
}

/**
 * The child's grant: the intersection of what the parent holds and what the call asked. Nothing
 * the parent lacks is granted (a looser mode, a tool or MCP server's tool it is not offered, a
 * path outside its scope), nor an MCP tool that acts outside the child's copy unless named (see
 * grantedTools), and each refusal is said. A read-only parent, or a shared child, gives
 * a read-only child; a propose parent a propose child. The parent's command-line rules carry
 * over; every other rule the parent holds still decides each of the child's calls, through the
 * intersected policy (policy/intersect.ts).
 */
export function narrowGrant(parent: ParentPowers, request: GrantRequest): Grant {
  const notGranted: string[] = [];
  const readOnly = parent.readOnly || request.isolation === "shared";
  let write = lesser(WRITE_POWER, parent.write, request.write ?? parent.write);
  if (request.write !== undefined && WRITE_POWER[request.write] > WRITE_POWER[parent.write])
    notGranted.push(`write "${request.write}": this session has write "${parent.write}"`);
  if (readOnly && write !== "deny" && write !== "propose") {
    if (request.write !== undefined && request.write !== "deny" && !parent.readOnly)
      notGranted.push(`write "${request.write}": a shared child only reads the parent's workspace`);
    write = parent.write === "propose" ? "propose" : "deny";
  }
  const shell = lesser(SHELL_POWER, parent.shell, request.shell ?? parent.shell);
  if (request.shell !== undefined && SHELL_POWER[request.shell] > SHELL_POWER[parent.shell])
    notGranted.push(`shell "${request.shell}": this session has shell "${parent.shell}"`);

  const mayWriteOutside = !readOnly && (write === "ask" || write === "allow");
  const { tools, mcp } = grantedTools(parent, request.tools, mayWriteOutside, notGranted);
  const editPaths = within(parent.flags.editPaths, request.edit_paths, "edit path", notGranted);
  // An edit path is also a read path (a scope whose edit path is not readable is refused, and the
  // child would not run): added to what it reads, never past the parent's, whose own edit paths
  // are among its read paths.
  const asked = within(parent.flags.readPaths, request.read_paths, "read path", notGranted);
  const readPaths = editPaths ? [...new Set([...(asked ?? []), ...editPaths])] : asked;

  const flags: RunFlags = {
    ...carried(parent.flags),
    write,
    shell,
    ...(readOnly ? { readOnly: true } : {}),
    // An empty list is a child with no tools at all: refused by the tool selection, as asked.
    tools: tools.join(","),
    ...(readPaths ? { readPaths } : {}),
    ...(editPaths ? { editPaths } : {}),
  };
  const recorded: JsonObject = {
    write,
    shell,
    read_only: readOnly,
    tools,
    // Each MCP tool granted with its effect class: one that is not read-only acts outside the
    // child's copy (it cannot be proposed or merged), granted only as named (grantedTools).
    ...(Object.keys(mcp).length > 0 ? { mcp_tools: mcp } : {}),
    ...(readPaths ? { read_paths: readPaths } : {}),
    ...(editPaths ? { edit_paths: editPaths } : {}),
    isolation: request.isolation,
    sandbox: parent.flags.sandbox ?? "workspace-write",
    network: parent.flags.network ?? "off",
    not_granted: notGranted,
  };
  return { flags, notGranted, recorded };
}

/**
 * The tools a child gets: the asked subset of the parent's (all of them when none is asked). An
 * MCP tool runs on the parent's own server, outside the child's copy: what it does cannot be
 * proposed or merged back. So a read-only one (a trusted server's, by its annotations) is
 * granted as any tool; any other only when the call names it and the child may write without
 * proposals (neither read-only, shared nor propose), and never by default.
 */
function grantedTools(
  parent: ParentPowers,
  asked: readonly string[] | undefined,
  mayWriteOutside: boolean,
  notGranted: string[],
): { tools: string[]; mcp: Record<string, EffectClass> } {
  const effects = parent.mcpEffects ?? {};
  const effectOf = (name: string): EffectClass => effects[name] ?? "external_side_effect";
  const mcp: Record<string, EffectClass> = {};
  const tools: string[] = [];
  if (asked !== undefined)
    for (const name of asked)
      if (!parent.tools.includes(name)) notGranted.push(`tool "${name}": this session is not offered it`);
  const notDefault: string[] = [];
  for (const name of parent.tools) {
    const isMcp = name.startsWith("mcp__");
    const named = asked?.includes(name) === true;
    if (asked !== undefined && !named) continue;
    if (isMcp && effectOf(name) !== "read_only") {
      if (!named) {
        notDefault.push(name);
        continue;
      }
      if (!mayWriteOutside) {
        notGranted.push(
          `tool "${name}" (effect ${effectOf(name)}): an MCP tool that is not read-only acts outside the child's copy, so only a child that may write without proposals gets it`,
        );
        continue;
      }
    }
    tools.push(name);
    if (isMcp) mcp[name] = effectOf(name);
  }
  if (notDefault.length > 0)
    notGranted.push(
      `MCP tools that are not read-only (${notDefault.join(", ")}): granted only when named in tools`,
    );
  return { tools, mcp };
}

function lesser<M extends string>(power: Record<M, number>, a: M, b: M): M {
  return power[a] <= power[b] ? a : b;
}

/**
 * A scope asked for, kept to the parent's: with a parent scope, only the paths it lists (a scope
 * is a list of exact files); without one, what was asked. Nothing asked: the parent's own.
 */
function within(
  parent: readonly string[] | undefined,
  asked: readonly string[] | undefined,
  what: string,
  notGranted: string[],
): string[] | undefined {
  if (asked === undefined) return parent === undefined ? undefined : [...parent];
  if (parent === undefined) return [...asked];
  const kept = asked.filter((path) => parent.includes(path));
  for (const path of asked)
    if (!parent.includes(path)) notGranted.push(`${what} "${path}": outside this session's scope`);
  // Asking only for paths outside the scope leaves the child the parent's scope, never none.
  return kept.length > 0 ? kept : [...parent];
}

/** The parent's options a child keeps as they are: the model, rules, sandbox, window, deadline. */
function carried(flags: RunFlags): RunFlags {
  const out: RunFlags = {};
  for (const key of [
    "allow",
    "ask",
    "deny",
    "sandbox",
    // The parent's network mode, never wider: a child cannot ask for one (its net() rules are the parent's).
    "network",
    "provider",
    "model",
    "baseUrl",
    "apiKeyEnv",
    "profile",
    "contextWindow",
    "requestDeadlineMs",
    "agents",
    "deferTools",
  ] as const) {
    const value = flags[key];
    if (value !== undefined) Object.assign(out, { [key]: value });
  }
  return out;
}

const recordedGrant = z.object({
  write: z.enum(["allow", "ask", "deny", "propose"]),
  shell: z.enum(["allow", "ask", "deny"]),
  read_only: z.boolean().optional(),
  tools: z.array(z.string()),
  read_paths: z.array(z.string()).optional(),
  edit_paths: z.array(z.string()).optional(),
});

/**
 * A child's own options rebuilt from the grant its parent recorded (`agent.started.grant`) and
 * the parent's effective options: what its own policy was built from, before the parent's
 * decided each call too. Undefined when the record is not a grant this harness writes.
 */
export function flagsFromGrant(parent: RunFlags, grant: unknown): RunFlags | undefined {
  const parsed = recordedGrant.safeParse(grant);
  if (!parsed.success) return undefined;
  const g = parsed.data;
  return {
    ...carried(parent),
    write: g.write,
    shell: g.shell,
    ...(g.read_only === true ? { readOnly: true } : {}),
    tools: g.tools.join(","),
    ...(g.read_paths ? { readPaths: g.read_paths } : {}),
    ...(g.edit_paths ? { editPaths: g.edit_paths } : {}),
  };
}
