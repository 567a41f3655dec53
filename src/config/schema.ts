import { z } from "zod";
import { parseRule, RULE_DECISIONS, RuleSyntaxError } from "../rules/grammar.js";
import { SHELL_MODES, WRITE_MODES } from "../rules/modes.js";
import { ADMIT_POINTS, HOOK_POINTS, type HookPoint, WRAP_POINT } from "../runtime/hook-points.js";
import { once } from "../shared/lazy-record.js";
import { ConfigError } from "./errors.js";

const MAX_HOOK_TIMEOUT_MS = 600_000;

/**
 * The config file's schemas, built on first use: a run without a config file parses none, and zod
 * builds a schema's whole object graph when it is declared.
 */
const schemas = once(buildSchemas);

function buildSchemas() {
  const permissionsSchema = z.strictObject({
    allow: z.array(z.string()).optional(),
    ask: z.array(z.string()).optional(),
    deny: z.array(z.string()).optional(),
    write: z.enum(WRITE_MODES).optional(),
    shell: z.enum(SHELL_MODES).optional(),
    read_only: z.boolean().optional(),
  });

  const hookEntrySchema = z
    .strictObject({
      name: z.string().min(1).max(100).optional(),
      kind: z.enum(["notify", "admit", "wrap"]),
      command: z.string().min(1).optional(),
      module: z.string().min(1).optional(),
      tools: z.array(z.string().min(1)).optional(),
      timeout_ms: z.number().int().min(1).max(MAX_HOOK_TIMEOUT_MS).optional(),
      /**
       * A command hook that needs the network (posting a notification): under `--network policy`
       * its sandbox gets a proxy deciding by the `net(...)` rules; otherwise it has none. Honoured
       * for the user's own hooks and approved plugins' only (session/config-hooks.ts).
       */
      network: z.boolean().optional(),
    })
    .superRefine((entry, context) => {
      if ((entry.command === undefined) === (entry.module === undefined)) {
        context.addIssue({ code: "custom", message: "a hook needs exactly one of `command` or `module`" });
      }
      if (entry.network !== undefined && entry.command === undefined) {
        context.addIssue({
          code: "custom",
          path: ["network"],
          message: "only a `command` hook takes `network` (a module runs inside harness, not in a sandbox)",
        });
      }
      if (entry.kind === "wrap" && entry.command !== undefined) {
        context.addIssue({
          code: "custom",
          message: "a wrap hook must be a `module` (a command cannot call next)",
        });
      }
    });

  const hooksShape = Object.fromEntries(
    [...HOOK_POINTS, WRAP_POINT].map((point) => [point, z.array(hookEntrySchema).optional()]),
  ) as Record<HookPoint | typeof WRAP_POINT, z.ZodOptional<z.ZodArray<typeof hookEntrySchema>>>;

  const hooksSchema = z.strictObject(hooksShape).superRefine((hooks, context) => {
    for (const [point, entries] of Object.entries(hooks)) {
      (entries ?? []).forEach((entry, index) => {
        const problem = kindProblem(point, entry.kind);
        if (problem !== undefined)
          context.addIssue({ code: "custom", path: [point, index, "kind"], message: problem });
      });
    }
  });

  /**
   * `credentials`: each key is the name of a variable in harness's own environment holding a secret;
   * the sandbox sees a placeholder under that name, and the egress proxy puts the real value into
   * requests to `hosts` only (network/credentials.ts). Honoured in the user config only.
   */
  const credentialSchema = z.strictObject({
    /** Host names the value may be sent to (exact names, any port; lowercased, no trailing dot). */
    hosts: z
      .array(
        z
          .string()
          .regex(
            /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+$|^\[[0-9a-fA-F:.]+\]$/,
            "not a host name",
          ),
      )
      .min(1),
    /** The request header that carries the credential (e.g. "authorization"). */
    header: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "not a header name"),
    /** How the header's value is written: `{value}` stands for the real value. Default "{value}". */
    format: z
      .string()
      .refine((format) => format.split("{value}").length === 2, "must contain {value} exactly once")
      .refine((format) => !/[\r\n\0]/.test(format), "no line breaks")
      .optional(),
  });

  const credentialsSchema = z.record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "not an environment variable name"),
    credentialSchema,
  );

  /**
   * A harness config file. Governance sections are validated strictly; `sandbox`, `shell`,
   * `acceptance`, `hook_commands`, `models`, `env` and `mcp_servers` belong to other modules and
   * pass through as unknown.
   */
  const configFileSchema = z.strictObject({
    $schema: z.string().optional(),
    permissions: permissionsSchema.optional(),
    trusted_projects: z.array(z.string().min(1)).optional(),
    hooks: hooksSchema.optional(),
    sandbox: z.unknown().optional(),
    shell: z.unknown().optional(),
    /** How acceptance commands run (sandbox profile, variables passed): honoured in the user config only. */
    acceptance: z.unknown().optional(),
    /** How command hooks run (sandbox profile, variables passed): honoured in the user config only. */
    hook_commands: z.unknown().optional(),
    models: z.unknown().optional(),
    /** The model profile a run uses when none is named (`--profile`, `--provider`, `--script`). User config only. */
    default_profile: z.string().min(1).optional(),
    /** The model profile sub-agents (the agent tool's children) use; default: their parent's model. User config only. */
    agent_profile: z.string().min(1).optional(),
    env: z.unknown().optional(),
    /** MCP servers by name (mcp/config.ts); a project's are proposals the user must approve. */
    mcp_servers: z.unknown().optional(),
    /**
     * The project-proposed MCP servers the user approved (`harness mcp approve`), by name: each
     * approval bound to a workspace's real path, the definition's digest and the SHA-256 of every
     * file it names (mcp/approval.ts). A bare digest was written by harness versions before the
     * binding: still read, never an approval. Read from the user config only.
     */
    mcp_approvals: z
      .record(
        z.string(),
        z.union([
          z.string().regex(/^[0-9a-f]{64}$/, "not a definition digest"),
          z.array(
            z.strictObject({
              workspace: z.string().min(1),
              definition: z.string().regex(/^[0-9a-f]{64}$/, "not a definition digest"),
              files: z.record(z.string().min(1), z.string()),
            }),
          ),
        ]),
      )
      .optional(),
    /**
     * The project-shipped skills, commands and plugins the user approved (`harness plugins approve`),
     * by name: each approval bound to a workspace's real path, the kind and the SHA-256 digest of
     * exactly what was approved (a skill's or plugin's whole folder, a command's file). A changed
     * digest is no approval. Read from the user config only.
     */
    plugin_approvals: z
      .record(
        z.string(),
        z.array(
          z.strictObject({
            workspace: z.string().min(1),
            kind: z.enum(["skill", "command", "plugin"]),
            digest: z.string().regex(/^[0-9a-f]{64}$/, "not a digest"),
          }),
        ),
      )
      .optional(),
    /** `harness serve`: per-identity policy (config/sections.ts serverIdentities). User config only. */
    server: z.unknown().optional(),
    /**
     * Paths the workspace record leaves out besides the root's .git/ and .harness/ (e.g. ["node_modules/"]):
     * `NAME/` a directory at any depth, `a/b/` or `/NAME/` one path from the root. User config only.
     */
    record_exclude: z
      .array(
        z
          .string()
          .min(1)
          .refine((p) => !p.includes("\0"), "no NUL"),
      )
      .optional(),
    /**
     * Deferred tools: `defer` is `--defer-tools`'s default (auto | always | never); `always_load`
     * names tools offered from the first request whatever is deferred (`mcp__github__*` patterns).
     */
    tools: z
      .strictObject({
        defer: z.enum(["auto", "always", "never"]).optional(),
        always_load: z
          .array(z.string().regex(/^[A-Za-z_*][A-Za-z0-9_*-]*$/, "not a tool name or pattern"))
          .optional(),
      })
      .optional(),
    /**
     * Secrets the egress proxy adds to requests to the hosts they are bound to; the sandbox only
     * ever sees a placeholder. User config only: a project's `credentials` is ignored.
     */
    credentials: credentialsSchema.optional(),
    /** Per-tool timeout overrides in milliseconds, e.g. {"shell": 300000}. */
    timeouts: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), z.number().int().positive()).optional(),
  });
  return { hookEntrySchema, hooksSchema, credentialSchema, configFileSchema };
}

type Schemas = ReturnType<typeof buildSchemas>;

/** The `hooks` section's schema (a plugin's hooks are parsed by it too). */
export function hooksSchema(): Schemas["hooksSchema"] {
  return schemas().hooksSchema;
}

function kindProblem(point: string, kind: "notify" | "admit" | "wrap"): string | undefined {
  if (point === WRAP_POINT) return kind === "wrap" ? undefined : `only wrap hooks go under "${WRAP_POINT}"`;
  if (kind === "wrap") return `wrap hooks go under "${WRAP_POINT}", not "${point}"`;
  if (kind === "admit" && !ADMIT_POINTS.includes(point as HookPoint)) {
    return `admit hooks can only run before execution (${ADMIT_POINTS.join(", ")})`;
  }
  return undefined;
}

export type CredentialSetting = z.infer<Schemas["credentialSchema"]>;

export type ConfigFile = z.infer<Schemas["configFileSchema"]>;

export type HookEntryConfig = z.infer<Schemas["hookEntrySchema"]>;

const topLevelKeys = () => Object.keys(schemas().configFileSchema.shape).filter((key) => key !== "$schema");

/**
 * Parse a config file's text. Throws ConfigError naming `fileLabel` and the first problem:
 * bad JSON, a wrong shape, an unknown key, or a permission rule that does not parse.
 */
export function parseConfigText(text: string, fileLabel: string): ConfigFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(fileLabel, `not valid JSON (${(error as Error).message})`);
  }
  return parseConfigValue(raw, fileLabel);
}

export function parseConfigValue(raw: unknown, fileLabel: string): ConfigFile {
  const result = schemas().configFileSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(fileLabel, describeIssue(result.error.issues[0]));
  const config = result.data;
  for (const decision of RULE_DECISIONS) {
    (config.permissions?.[decision] ?? []).forEach((rule, index) => {
      try {
        parseRule(decision, rule, fileLabel);
      } catch (error) {
        if (!(error instanceof RuleSyntaxError)) throw error;
        const where = `permissions.${decision}[${index}]`;
        throw new ConfigError(
          fileLabel,
          `invalid permission rule ${JSON.stringify(rule)} at ${where}: ${error.problem}`,
        );
      }
    });
  }
  return config;
}

function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (issue === undefined) return "invalid config";
  const where = issue.path.length === 0 ? "" : `at ${formatPath(issue.path)}: `;
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((key) => JSON.stringify(key)).join(", ");
    if (issue.path.length === 0)
      return `unknown top-level key ${keys}; allowed keys: ${topLevelKeys().join(", ")}`;
    return `${where}unknown key ${keys}`;
  }
  if (issue.code === "invalid_type" && issue.path.length === 0) return "the config must be a JSON object";
  return `${where}${issue.message}`;
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, index) =>
      typeof part === "number" ? `[${part}]` : index === 0 ? String(part) : `.${String(part)}`,
    )
    .join("");
}
