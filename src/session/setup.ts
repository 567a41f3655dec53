import { realpathSync } from "node:fs";
import { ConfigError } from "../config/errors.js";
import type { LoadedConfig } from "../config/load.js";
import {
  agentProfile,
  defaultProfile,
  modelProfiles,
  recordExcludes,
  shellSetting,
  toolTimeouts,
} from "../config/sections.js";
import { type AcceptanceCheck, CommandCheck } from "../engine/acceptance.js";
import type { SessionEnvironment, StartInstructions } from "../engine/instructions.js";
import type { PolicyHandle } from "../engine/options.js";
import { generalProviderAdvice, type ProviderAdvice } from "../engine/provider-advice.js";
import type { QuotaPort } from "../engine/quota-port.js";
import type { ConnectionInfo, ProcessSupervision } from "../engine/recovery.js";
import { SpawnJournal } from "../engine/recovery.js";
import type { DeferSettings } from "../engine/tool-offer.js";
import type { ToolSurfaceSource } from "../engine/tool-surface.js";
import type { JournalStore } from "../journal/store.js";
import { definitionDigest, type McpServerDefinition } from "../mcp/config.js";
import { serverNamedFiles } from "../mcp/named-files.js";
import type { ServerSelection } from "../mcp/selection.js";
import { parseToolSelection } from "../mcp/tool-selection.js";
import { DenyApprover } from "../policy/approver.js";
import { evaluate } from "../policy/evaluation.js";
import { SessionGrants } from "../policy/grants.js";
import { HookRunner } from "../policy/hooks.js";
import { pathResolverOf } from "../policy/path-aliases.js";
import { PolicyPermissions } from "../policy/policy-permissions.js";
import { programRules } from "../policy/program-rules.js";
import { ScopedPermissions, ScopeError, validateScope } from "../policy/scope.js";
import { subjectKindOf } from "../policy/subject-kind.js";
import { ProposalOverlay } from "../proposals/overlay.js";
import {
  createProvider,
  DEFAULT_KEY_ENV,
  type ModelPrices,
  type ModelProfile,
  ProviderConfigError,
  parseProfile,
} from "../providers/config.js";
import type { ContextBudget } from "../providers/context-window.js";
import type { Provider } from "../providers/provider.js";
import { RuleSyntaxError } from "../rules/grammar.js";
import type { ApprovalPort, GrantPort, HookPort, ProposalPort, ProposalRecord } from "../runtime/ports.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import { UntrustedWatch } from "../runtime/untrusted.js";
import type { SessionNetwork } from "../sandbox/session-network.js";
import { killSurvivors } from "../sandbox/tree.js";
import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import { createFileTools, createProgramTools } from "../tools/builtin.js";
import {
  isToolProfile,
  selectTools,
  ToolSelectionError,
  withoutOrphanProcessTools,
} from "../tools/profiles.js";
import { BackgroundProcesses } from "../tools/shell/background.js";
import { createProcessTools } from "../tools/shell/process-tools.js";
import { createShellTool } from "../tools/shell/shell.js";
import type { AnyTool } from "../tools/tool.js";
import { Delegation } from "./agents/delegation.js";
import { type AgentLimits, NO_DELEGATION } from "./agents/limits.js";
import { agentTool } from "./agents/tool.js";
import { configNamedFiles, workspaceRelative } from "./config-hooks.js";
import { contextBudgetFor } from "./context-budget.js";
import { type SessionCredentials, sessionCredentials } from "./credentials.js";
import { deferSettings } from "./defer-tools.js";
import { type Extensions, usable } from "./extensions/discover.js";
import { withPluginServers } from "./extensions/plugin-parts.js";
import { extensionNotices } from "./extensions/session.js";
import { createSkillTool } from "./extensions/skill-tool.js";
import { loadGovernance } from "./governance.js";
import { sessionEnvironment, startInstructions } from "./instructions.js";
import { type McpServers, mcpSelection, startSessionServers, unavailableNote } from "./mcp-servers.js";
import { McpToolSurface } from "./mcp-surface.js";
import { type CallNetwork, type HookNetworks, sessionNetwork } from "./network.js";
import type { Notify } from "./notice.js";
import type { RunFlags } from "./run-flags.js";
import { UsageError } from "./usage-error.js";
import type { OpenedWorkspace } from "./workspace.js";
import { serversWithoutWorkspaceCode } from "./workspace-code.js";

/** The call id a session-wide MCP server's processes and connections are journaled under. */
const SERVICE_CALL_PREFIX = "mcp_server:";

/** A run's setup from flags and config files: the provider, tools, policy ports, hooks and processes. */
export interface RunSetup {
  flags: RunFlags;
  provider: Provider;
  snapshot: ToolSnapshot;
  policy: PolicyHandle;
  approver: ApprovalPort;
  grants: GrantPort;
  hooks?: HookPort;
  processes: ProcessSupervision;
  /** What to tell the user when the model provider fails for good (names the key variable). */
  providerAdvice?: ProviderAdvice;
  /** The profile's prices, when it gives them: the only source of a cost figure. */
  prices?: ModelPrices;
  /** Propose mode: the overlay factory (see src/proposals). */
  proposals?: (existing: readonly ProposalRecord[]) => ProposalPort;
  notices: string[];
  /** The config files as this setup read them (the model catalog of /model and switchModel reads them too). */
  config: LoadedConfig;
  /** Per-tool timeout overrides from config (milliseconds). */
  timeoutFor?: (tool: AnyTool) => number;
  /** The context window requests must fit, and the reserve kept for the reply. */
  context: ContextBudget;
  /** The user's AGENTS.md (and the workspace root's, read by the engine). */
  instructions?: StartInstructions;
  /** The environment stated to the model in a new session. */
  environment?: SessionEnvironment;
  /** An acceptance check for a command: run through the session's executor, in its profile. */
  acceptanceCheck: (command: string, timeoutMs: number) => AcceptanceCheck;
  /**
   * Start, in the background, what the first acceptance command will wait for (the sandbox's
   * probe and the session's network namespace), for a door that will run them: they are then
   * ready when the model is done. Nothing runs and nothing is recorded.
   */
  warmAcceptance?(): void;
  /** The started MCP servers: stopped when the session ends. */
  mcp?: McpServers;
  /**
   * The network namespace the session's shell calls and acceptance commands share: closed when
   * the session ends (every process still in it is killed).
   */
  sessionNetwork?: SessionNetwork;
  /** Network access for each call (`--network policy`); absent: calls have none. */
  callNetwork?: CallNetwork;
  /** The networks of sub-agents whose calls run this session's hooks, by the child's session id. */
  hookNetworks: HookNetworks;
  /** The skills, commands and plugins found for this session, with their trust (the doors expand commands from it). */
  extensions?: Extensions;
  /** Which tools are offered up front and which are loaded on demand (engine/tool-offer.ts). */
  deferTools?: DeferSettings;
  /** Built-ins plus the servers' current tools, refreshed at step boundaries. */
  toolSurface?: ToolSurfaceSource;
  /** What the workspace record leaves out besides the root's .git/ and .harness/ (user config `record_exclude`). */
  workspaceExcludes?: string[];
  /** Files the workspace record hashes but does not keep a copy of: those read_file may not read without asking. */
  workspaceWithheld?(path: string): boolean;
}

export async function buildSetup(options: {
  workspace: OpenedWorkspace;
  flags: RunFlags;
  script?: string;
  /**
   * What the script may be: `code` (a `.mjs` module is imported, the CLI user's own file) or
   * `data` (JSON only, whatever its name: a server client without host rights named it).
   */
  scriptAs?: "code" | "data";
  /**
   * Whether code the workspace brings may run on the host: the project config's hooks and
   * settings of a trusted project, the MCP servers it proposes, and any MCP server that runs
   * unsandboxed from the workspace. False for a server client without host rights: the workspace
   * is the client's, so what it holds is the client's word.
   */
  workspaceCode?: boolean;
  interactive: boolean;
  env?: NodeJS.ProcessEnv;
  /** Where calls come from instead of a configured model (harness mcp serve: the MCP client). */
  provider?: Provider;
  /** The given provider's prices (a child on its parent's model): what a money budget is priced at. */
  providerPrices?: ModelPrices;
  /** Who answers `ask` instead of the terminal (harness mcp serve: the MCP client, by elicitation). */
  approver?: ApprovalPort;
  /** Start the user's MCP servers (harness run/resume), reporting progress lines here. */
  mcp?: (line: string) => void;
  /**
   * The session being set up and its journal: where the `agent` tool's children are journaled.
   * `quota`: the door's shared quota, which its children's model requests reserve against too.
   */
  session?: { id: string; store: JournalStore; notify?: Notify; quota?: QuotaPort };
  /**
   * A sub-agent's: its parent's started MCP servers, shared rather than started again (a child
   * never gets a server its parent lacks). Its grant's `--tools` list picks their tools; they are
   * the parent's to stop, never the child's.
   */
  sharedMcp?: McpServers;
  /**
   * MCP servers the person chose in their editor (ACP `session/new`): started like the user
   * config's own servers, sandboxed the same way; a name the user config already has keeps the
   * user config's definition.
   */
  editorServers?: Readonly<Record<string, McpServerDefinition>>;
}): Promise<RunSetup> {
  const { workspace, flags, interactive } = options;
  const env = options.env ?? process.env;
  const spawnJournal = new SpawnJournal();
  const workspaceCode = options.workspaceCode !== false;
  // The session's network, made below from the policy the governance loads: command hooks that
  // ask for the network reach it through this, when a hook runs (network `off`: none).
  let callNetwork: CallNetwork | undefined;
  // A sub-agent's calls run this session's hooks: a hook running for a child's call reaches the
  // network through the child's (its connections journaled in the child's session, under the
  // child's call and the child's turn's untrusted content). A session not registered: none.
  const hookNetworks: HookNetworks = new Map();
  const governance = await loadGovernance(workspace.root, flags, env, {
    onSpawn: (report) => spawnJournal.onSpawn(report),
    hookNetwork: (callId, hook, signal, session) => {
      const network =
        session === options.session?.id || options.session === undefined
          ? callNetwork
          : hookNetworks.get(session);
      return network?.(callId, signal, { hook });
    },
    ...(workspaceCode ? {} : { trustProject: false }),
  }).catch((error: unknown) => {
    if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
    if (error instanceof RuleSyntaxError) throw new UsageError(error.message);
    throw error;
  });
  const { processes, executor } = governance;

  // Files the configs name (hook scripts, modules, MCP servers' programs) join the protected set
  // before any tool runs.
  const servers = (() => {
    try {
      return withPluginServers(
        withEditorServers(mcpSelection(governance.config, workspace.root), options.editorServers),
        governance.extensions,
        realpathSync(workspace.root),
      );
    } catch (error) {
      if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
      throw error;
    }
  })();
  workspace.fs.protectFiles([
    ...configNamedFiles(governance.config, workspace.root, governance.pluginHooks),
    ...serverNamedFiles(
      [...servers.selection.start, ...servers.selection.unapproved].map((server) => server.definition),
      workspace.root,
    ).flatMap((file) => workspaceRelative(file, workspace.root) ?? []),
  ]);
  const toolSelection = parseToolSelection(flags.tools ?? "coding");
  const shell = shellSetting(governance.config);
  // A program a deny rule names is covered by a refusing stub in the shell's sandbox.
  const deniedPrograms = programRules(governance.policy).map(({ name, rule }) => ({ name, rule }));
  // `--network policy`: each call's processes get a proxy of their own, deciding by the net() rules.
  // Without the sandbox's namespace nothing would hold a process to that proxy: refused, not opened.
  if (flags.network === "policy" && processes.shell === "none" && processes.shellRefusal === undefined) {
    throw new UsageError(
      "--network policy needs the sandbox: with --sandbox off a command reaches the network directly and no net() rule could be enforced (use --network off, or keep the sandbox on)",
    );
  }
  let sessionApprover: ApprovalPort | undefined;
  // The engine attaches this turn's untrusted content and the hosts contacted so far.
  const untrusted = new UntrustedWatch();
  // Credentials matter only where a proxy can substitute them: with network `policy`.
  const credentials: SessionCredentials | undefined =
    flags.network === "policy" ? await sessionCredentials(governance.config, env) : undefined;
  callNetwork =
    flags.network === "policy"
      ? sessionNetwork({
          policy: governance.policy,
          approver: () => sessionApprover,
          record: (connection) => spawnJournal.onConnection(connection),
          untrusted,
          ...(credentials?.egress !== undefined
            ? {
                credentials: credentials.egress,
                // A connection to a bound host carries a secret: after untrusted content it asks.
                credentialBound: (host: string) =>
                  (credentials.egress?.credentials.boundTo(host).length ?? 0) > 0,
              }
            : {}),
          recordCredential: (use) => spawnJournal.onCredentialUsed(use),
        })
      : undefined;
  // The session's background processes: shared by the shell and the process tools, kept across
  // its turns, stopped when it closes.
  const background = new BackgroundProcesses();
  const shellTool = createShellTool({
    sandbox: {
      profile: processes.shell,
      ...(processes.bwrapPath ? { bwrapPath: processes.bwrapPath } : {}),
      ...processes.view,
      ...(deniedPrograms.length > 0 ? { deniedPrograms } : {}),
    },
    executor,
    ...(processes.shellRefusal ? { refusal: processes.shellRefusal } : {}),
    onSpawn: (info) => spawnJournal.onSpawn(info),
    background,
    ...(callNetwork ? { network: callNetwork } : {}),
    ...(shell.pass_env ? { passEnv: shell.pass_env } : {}),
    ...(shell.allow_env ? { allowEnv: shell.allow_env } : {}),
    ...(shell.default_timeout_ms ? { defaultTimeoutMs: shell.default_timeout_ms } : {}),
    ...(shell.max_timeout_ms ? { maxTimeoutMs: shell.max_timeout_ms } : {}),
  });
  // Delegation (the `agent` tool) for a session whose recorded limits allow it: its children are
  // journaled in this session's store, bound to this session's policy once that is built below.
  const agentLimits = flags.agents ?? NO_DELEGATION;
  const delegation =
    options.session !== undefined && (agentLimits.depth ?? 0) > 0
      ? new Delegation({
          sessionId: options.session.id,
          workspace,
          store: options.session.store,
          limits: { ...NO_DELEGATION, ...agentLimits } as AgentLimits,
          interactive,
          env,
          ...(options.session.notify ? { notify: options.session.notify } : {}),
          ...(options.session.quota ? { quota: options.session.quota } : {}),
        })
      : undefined;
  // Skills, commands and plugins: the user's, and the project's the user approved by digest.
  const { extensions } = governance;
  let tools: AnyTool[];
  try {
    const { builtins } = toolSelection;
    const available = [
      ...createFileTools(),
      // web_fetch's hops go through the same per-call proxy and rules as a command's connections.
      ...createProgramTools(callNetwork ? { network: (callId, signal) => callNetwork(callId, signal) } : {}),
      shellTool,
      ...createProcessTools(background),
      ...(delegation ? [agentTool(delegation)] : []),
    ];
    tools = builtins === undefined ? [] : withoutOrphanProcessTools(selectTools(builtins, available));
    // A profile (coding, readonly...) brings the agent tool along where the session may delegate.
    if (delegation && builtins !== undefined && isToolProfile(builtins)) tools.push(agentTool(delegation));
    // A profile brings the skill tool along when the user or an approved project offers skills.
    const skills = extensions.skills.filter(usable);
    if (skills.length > 0 && builtins !== undefined && isToolProfile(builtins))
      tools.push(createSkillTool(skills));
  } catch (error) {
    if (error instanceof ToolSelectionError) throw new UsageError(`--tools: ${error.message}`);
    throw error;
  }
  const model = options.provider
    ? { provider: options.provider }
    : await loadProvider(options.script, flags, governance.config, env, options.scriptAs).catch(
        (error: unknown) => {
          // A profile the config's schema rejects (e.g. a price that is not a number) is the user's to fix.
          if (error instanceof ConfigError) throw new UsageError(`configuration error: ${error.message}`);
          throw error;
        },
      );
  // A given provider (a child on its parent's model) comes with its prices, if any.
  const prices = model.profile?.prices ?? options.providerPrices;
  const started = workspaceCode
    ? { selection: servers.selection, notices: servers.notices }
    : serversWithoutWorkspaceCode(servers.selection, workspace.root, processes.override);
  const notices = [
    ...governance.config.notices,
    ...processes.notices,
    ...started.notices,
    ...(credentials?.notices ?? []),
    ...extensionNotices(extensions),
  ];

  // The user's MCP servers start last: nothing after this may leave them running on an error.
  const mcp = options.mcp
    ? await startSessionServers(
        started.selection,
        workspace.root,
        {
          executor,
          workspace: workspace.root,
          view: processes.view,
          ...(processes.bwrapPath ? { bwrapPath: processes.bwrapPath } : {}),
          ...(processes.override ? { override: processes.override } : {}),
          onSpawn: (report, server) =>
            spawnJournal.onServiceSpawn({ ...report, callId: `${SERVICE_CALL_PREFIX}${server}` }),
          ...(callNetwork
            ? {
                // A server's connections may come before the session opens or between turns:
                // held until it can record them. Routed by who asked, never by the id (a model
                // names its calls' ids, so an id prefix proves nothing).
                network: (server: string) => {
                  const callId = `${SERVICE_CALL_PREFIX}${server}`;
                  return {
                    ...callNetwork(callId),
                    record: (connection: Omit<ConnectionInfo, "call_id">) => {
                      void spawnJournal
                        .onServiceConnection({ call_id: callId, ...connection })
                        .catch(() => undefined);
                    },
                  };
                },
              }
            : {}),
        },
        options.mcp,
      )
    : undefined;
  try {
    return await finishSetup();
  } catch (error) {
    await mcp?.servers.close();
    await executor.close();
    throw error;
  }

  async function finishSetup(): Promise<RunSetup> {
    if (mcp) notices.push(...mcp.notices);
    const surface = new McpToolSurface(tools, mcp?.servers ?? options.sharedMcp, toolSelection.mcp);
    for (const tool of surface.unavailable()) notices.push(unavailableNote(tool));
    const snapshot = surface.current;
    // By the current surface: tools an MCP server adds mid-session are classed like the first ones.
    const kinds = (name: string) => {
      const entry = surface.current.get(name);
      return entry ? subjectKindOf(entry.tool) : undefined;
    };

    // Rules on a file cover every symlink to it: each path is also decided under its target.
    const resolvePath = pathResolverOf(workspace.fs);
    const policyPort = new PolicyPermissions(governance.policy, kinds, resolvePath);
    const scoped = await scopedPermissions(policyPort, flags, workspace, kinds);
    const permissions = scoped?.port ?? policyPort;
    // The terminal approver's code is loaded only by a session that asks on a terminal.
    const approver =
      options.approver ??
      (interactive
        ? new (await import("../policy/tty-approver.js")).TtyApprover(process.stdin, process.stderr)
        : new DenyApprover());
    sessionApprover = approver;
    // Empty here: the engine grants again what a resumed session's journal approved for the session.
    const grants = new SessionGrants();
    const hooks = governance.hooks.length > 0 ? new HookRunner(governance.hooks) : undefined;

    // A money budget is checked against the profile's prices; without them it would be a guess.
    if (flags.maxCostUsd !== undefined && prices === undefined)
      throw new UsageError(
        `--max-cost-usd ${flags.maxCostUsd} needs the model's prices, and this model's profile gives none: ` +
          'add "prices": { "input_per_mtok": ..., "output_per_mtok": ... } to the profile in your config',
      );
    const context = contextBudgetFor(flags, model.profile, notices);
    const { policy } = governance;
    const childProfile = agentProfile(governance.config);
    delegation?.bind({
      provider: model.provider,
      ...(childProfile !== undefined ? { agentProfile: childProfile } : {}),
      ...(prices ? { prices } : {}),
      permissions,
      approver,
      ...(hooks ? { hooks, hookNetworks } : {}),
      ...(mcp || options.sharedMcp ? { mcp: mcp?.servers ?? options.sharedMcp! } : {}),
      powers: {
        flags,
        write: policy.write.value,
        shell: policy.shell.value,
        readOnly: policy.readOnly.value,
        tools: [...snapshot.names],
        mcpEffects: Object.fromEntries(
          [...snapshot.names]
            .filter((name) => name.startsWith("mcp__"))
            .map((name) => [name, snapshot.get(name)!.tool.effect]),
        ),
      },
      killSurvivors: (spawn) => killSurvivors(spawn),
    });
    const recorded = recordExcludes(governance.config);
    if (recorded.notice) notices.push(recorded.notice);
    return {
      instructions: await startInstructions(env),
      environment: sessionEnvironment(
        snapshot,
        processes,
        { write: policy.write.value, shell: policy.shell.value, read_only: policy.readOnly.value },
        env,
      ),
      flags,
      provider: model.provider,
      ...(model.advice ? { providerAdvice: model.advice } : {}),
      ...(prices ? { prices } : {}),
      snapshot,
      policy: scoped
        ? {
            describe: { ...policyPort.describe, scope: scoped.describe },
            digest: digestOf({ policy: policyPort.digest, scope: scoped.describe }),
            permissions,
          }
        : { describe: policyPort.describe, digest: policyPort.digest, permissions },
      approver,
      grants,
      ...(hooks ? { hooks } : {}),
      ...(callNetwork ? { callNetwork } : {}),
      hookNetworks,
      ...(governance.policy.write.value === "propose"
        ? { proposals: (existing: readonly ProposalRecord[]) => new ProposalOverlay(workspace.fs, existing) }
        : {}),
      ...timeoutOverrides(governance.config),
      processes: {
        journal: spawnJournal,
        untrusted,
        killSurvivors: (spawn) => killSurvivors(spawn),
        background,
      },
      context,
      notices,
      extensions,
      config: governance.config,
      workspaceExcludes: recorded.excludes,
      // The walk meets files by their real paths (it follows no symlink), so the rules decide on them directly.
      workspaceWithheld: (path: string) =>
        evaluate(governance.policy, {
          tool: "read_file",
          effect: "read_only",
          args: { path },
          subjectKind: "path",
        }).decision !== "allow",
      acceptanceCheck: (command, timeoutMs) =>
        new CommandCheck(command, {
          workspace: workspace.root,
          executor,
          profile: processes.acceptance,
          timeoutMs,
          // An acceptance command the user runs unsandboxed has the host's network anyway.
          ...(callNetwork && processes.acceptance.sandbox.isolating
            ? { network: () => callNetwork(`acceptance:${command}`) }
            : {}),
        }),
      warmAcceptance: () => void processes.acceptance.sandbox.warm?.(executor.sessionNetwork),
      ...(executor.sessionNetwork !== undefined ? { sessionNetwork: executor.sessionNetwork } : {}),
      // Shared servers give the surface, never `mcp`: what the setup owns is what it stops.
      ...(mcp
        ? { mcp: mcp.servers, toolSurface: surface }
        : options.sharedMcp
          ? { toolSurface: surface }
          : {}),
      deferTools: deferSettings(
        flags,
        governance.config,
        tools.map((tool) => tool.name),
        started.selection.start,
      ),
    };
  }
}

export async function loadProvider(
  script: string | undefined,
  flags: RunFlags,
  config: Parameters<typeof modelProfiles>[0],
  env: NodeJS.ProcessEnv,
  scriptAs: "code" | "data" = "code",
): Promise<{ provider: Provider; advice?: ProviderAdvice; profile?: ModelProfile }> {
  if (script !== undefined) {
    if (flags.provider || flags.profile)
      throw new UsageError("--script and --provider/--profile are exclusive");
    // The scripted model is loaded only for a script (its schemas are not every run's cost).
    const { ScriptedProvider } = await import("../providers/scripted/provider.js");
    return {
      provider:
        scriptAs === "data" ? await ScriptedProvider.loadData(script) : await ScriptedProvider.load(script),
    };
  }
  let profile: unknown;
  if (flags.profile) {
    const profiles = modelProfiles(config);
    const found = profiles[flags.profile];
    if (!found) {
      const names = Object.keys(profiles);
      throw new UsageError(
        `no model profile "${flags.profile}" in your config${names.length ? ` (profiles: ${names.join(", ")})` : ""}`,
      );
    }
    profile = {
      ...found,
      ...(flags.model ? { model: flags.model } : {}),
      ...(flags.baseUrl ? { base_url: flags.baseUrl } : {}),
      ...(flags.apiKeyEnv ? { api_key_env: flags.apiKeyEnv } : {}),
      ...(flags.requestDeadlineMs ? { request_deadline_ms: flags.requestDeadlineMs } : {}),
    } satisfies Partial<ModelProfile>;
  } else if (flags.provider) {
    if (!flags.model) throw new UsageError("--provider needs --model ID");
    profile = {
      provider: flags.provider,
      model: flags.model,
      ...(flags.baseUrl ? { base_url: flags.baseUrl } : {}),
      ...(flags.apiKeyEnv ? { api_key_env: flags.apiKeyEnv } : {}),
      ...(flags.requestDeadlineMs ? { request_deadline_ms: flags.requestDeadlineMs } : {}),
    };
  } else {
    const named = defaultProfile(config);
    if (named === undefined) {
      throw new UsageError(
        "no model configured: pass --script FILE (offline scripted model), --provider NAME --model ID, or --profile NAME " +
          "(or set a default once with: harness init)",
      );
    }
    const found = modelProfiles(config)[named];
    if (!found)
      throw new UsageError(`default_profile "${named}" in your user config names no profile in "models"`);
    // Recorded as if given: a resume uses this profile even after the default changes.
    flags.profile = named;
    profile = {
      ...found,
      ...(flags.model ? { model: flags.model } : {}),
      ...(flags.baseUrl ? { base_url: flags.baseUrl } : {}),
      ...(flags.apiKeyEnv ? { api_key_env: flags.apiKeyEnv } : {}),
      ...(flags.requestDeadlineMs ? { request_deadline_ms: flags.requestDeadlineMs } : {}),
    } satisfies Partial<ModelProfile>;
  }
  try {
    const provider = createProvider(profile, env);
    const parsed = parseProfile(profile);
    return { provider, advice: keyAwareAdvice(parsed), profile: parsed };
  } catch (error) {
    if (error instanceof ProviderConfigError) throw new UsageError(error.message);
    throw error;
  }
}

/** Advice that names the key variable in use when the provider rejects the key. */
function keyAwareAdvice(profile: ModelProfile): ProviderAdvice {
  const variable = profile.api_key_env ?? DEFAULT_KEY_ENV[profile.provider];
  const auth =
    variable === undefined
      ? "the server wants an API key: put it in an environment variable and pass --api-key-env VAR (or api_key_env in the profile)"
      : `check the API key in the environment variable ${variable} (keys are read only from the environment)`;
  return (code) => (code === "AUTH" ? auth : generalProviderAdvice(code));
}

function timeoutOverrides(config: Parameters<typeof toolTimeouts>[0]): Pick<RunSetup, "timeoutFor"> {
  const timeouts = toolTimeouts(config);
  if (timeouts.size === 0) return {};
  return { timeoutFor: (tool) => timeouts.get(tool.name) ?? tool.timeoutMs };
}

/** `--read-path`/`--edit-path`: a task scope that wraps the policy, validated before the run starts. */
async function scopedPermissions(
  inner: PolicyPermissions,
  flags: RunFlags,
  workspace: OpenedWorkspace,
  kinds: (name: string) => ReturnType<typeof subjectKindOf> | undefined,
): Promise<{ port: ScopedPermissions; describe: JsonObject } | undefined> {
  if (!flags.readPaths?.length && !flags.editPaths?.length) return undefined;
  try {
    const scope = await validateScope(
      { readPaths: flags.readPaths ?? [], editPaths: flags.editPaths ?? [] },
      workspace.fs,
    );
    const port = new ScopedPermissions(inner, scope, kinds, pathResolverOf(workspace.fs));
    return { port, describe: scope.describe() };
  } catch (error) {
    if (error instanceof ScopeError) throw new UsageError(error.message);
    throw error;
  }
}

/** The editor's servers after the configured ones, as the user's own; a configured name wins. */
function withEditorServers(
  selection: ServerSelection,
  editor: Readonly<Record<string, McpServerDefinition>> | undefined,
): ServerSelection {
  if (editor === undefined) return selection;
  const taken = new Set([...selection.start, ...selection.unapproved].map((server) => server.name));
  const added = Object.keys(editor)
    .sort()
    .filter((name) => !taken.has(name))
    .map((name) => {
      const definition = editor[name] as McpServerDefinition;
      return { name, definition, source: "user" as const, digest: definitionDigest(definition) };
    });
  return { ...selection, start: [...selection.start, ...added] };
}
