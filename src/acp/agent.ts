import { join } from "node:path";
import {
  type AgentApp,
  type AgentContext,
  agent,
  type ClientCapabilities,
  type ContentBlock,
  PROTOCOL_VERSION,
  type PromptResponse,
  RequestError,
  type SessionModeState,
  type SessionUpdate,
  type StopReason,
} from "@agentclientprotocol/sdk";
import type { EngineListener, RunSummary } from "../engine/options.js";
import { verifyJournal } from "../journal/verify.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import { ProposalOverlay } from "../proposals/overlay.js";
import type { SessionConfig } from "../session/config.js";
import { expandCommandLine } from "../session/extensions/commands.js";
import { EngineSession, type Turn } from "../session/handle.js";
import { sessionRows } from "../session/listing.js";
import { noticeLine } from "../session/notice.js";
import { recordModeSwitch } from "../session/operations/mode.js";
import { type PreparedSession, prepareSession } from "../session/prepare.js";
import { validateSessionId } from "../session/session-id.js";
import { harnessVersion } from "../session/version.js";
import { newSessionId, type OpenedWorkspace, openWorkspace } from "../session/workspace.js";
import type { JsonObject } from "../shared/json.js";
import { AcpApprover, type PermissionQuestion } from "./approver.js";
import { ACP_COMMANDS, commandOf, runCommand, templateCommands } from "./commands.js";
import { type EditorServers, editorServers } from "./mcp.js";
import {
  ceilingOf,
  isWriteMode,
  ModePermissions,
  recordedMode,
  WRITE_MODES,
  type WriteMode,
  withinCeiling,
} from "./modes.js";
import { wholeChange } from "./preview.js";
import { UpdateMapper } from "./updates.js";

export interface AcpAgentOptions {
  /** The command line's session configuration (harness acp's run options). */
  config: SessionConfig;
  /** --workspace: the only workspace an editor may open sessions in (else the client's cwd). */
  workspace?: string;
  /** stderr: stdout is the protocol. */
  log(line: string): void;
}

const MODE_NAMES: Record<WriteMode, { name: string; description: string }> = {
  "read-only": { name: "Read only", description: "nothing is written and no command runs" },
  propose: { name: "Propose", description: "writes become proposals to review; the files stay as they are" },
  ask: { name: "Ask", description: "every write is asked first" },
  allow: { name: "Allow", description: "writes the configuration allows run without asking" },
};

/** One session an editor has open: its harness session, its mode, its running turn. */
interface OpenSession {
  id: string;
  workspace: OpenedWorkspace;
  prepared: PreparedSession;
  /** Created at the first prompt of a new session (its first mode is then recorded in session.started). */
  handle?: EngineSession;
  mode: WriteMode;
  ceiling: WriteMode;
  mapper: UpdateMapper;
  turn?: Turn | undefined;
  /** The editor's MCP servers, as session.started records them. */
  servers: JsonObject[];
  /** A mode switch asked for while a turn ran: journaled and applied when it ends. */
  pendingMode?: WriteMode | undefined;
  cancelled: boolean;
}

/**
 * `harness acp`: an Agent Client Protocol agent over the session layer. Each ACP session is an
 * ordinary harness session (its id is the ACP sessionId) set up by `prepareSession` as every door
 * sets one up; a prompt is a turn of `EngineSession`, updates are its journal records mapped
 * (updates.ts), an ask is `session/request_permission` (approver.ts), a mode narrows the recorded
 * policy and is journaled (modes.ts).
 */
export function acpAgent(options: AcpAgentOptions): AgentApp {
  const sessions = new Map<string, OpenSession>();
  let capabilities: ClientCapabilities = {};
  let client: AgentContext | undefined;

  const send = (sessionId: string, update: SessionUpdate): void => {
    client?.notify("session/update", { sessionId, update }).catch((error: unknown) => {
      options.log(`session ${sessionId}: an update was not sent: ${String(error)}`);
    });
  };

  async function workspaceFor(cwd: string): Promise<OpenedWorkspace> {
    const workspace = await openWorkspace(cwd, { notify: (notice) => options.log(noticeLine(notice)) });
    if (options.workspace !== undefined) {
      const allowed = await openWorkspace(options.workspace, { notify: () => {} });
      if (allowed.root !== workspace.root)
        throw RequestError.invalidParams(
          { cwd },
          `harness acp was started for ${allowed.root}; this editor asked for ${workspace.root}`,
        );
    }
    return workspace;
  }

  async function open(
    workspace: OpenedWorkspace,
    sessionId: string,
    records: readonly AnyRecord[],
    servers: EditorServers,
  ) {
    const live: Partial<OpenSession> & { id: string } = { id: sessionId, cancelled: false };
    const approver = new AcpApprover({
      available: true,
      preview: async (request) => wholeChange(workspace.root, request.tool, request.arguments),
      ask: (question, signal) => askPermission(sessionId, question, signal),
    });
    const log = (line: string) => options.log(`session ${sessionId}: ${line}`);
    const prepared = await prepareSession(options.config, {
      workspace,
      sessionId,
      records,
      interactive: true,
      approver,
      editorServers: servers.definitions,
      mcp: log,
      notify: (notice) => log(noticeLine(notice)),
    });
    const setup = prepared.run.setup;
    const ceiling = ceilingOf(setup.policy.describe);
    const mode = recordedMode(records) ?? ceiling;
    // The recorded policy (and the digest a resume checks) stays; the mode only narrows it.
    prepared.run.setup = {
      ...setup,
      policy: {
        ...setup.policy,
        permissions: new ModePermissions(setup.policy.permissions, () => session.mode),
      },
      // Propose mode needs the overlay even in a session configured to ask or allow.
      proposals: setup.proposals ?? ((existing) => new ProposalOverlay(workspace.fs, existing)),
    };
    const session: OpenSession = {
      ...live,
      workspace,
      prepared,
      mode: withinCeiling(mode, ceiling) ? mode : ceiling,
      ceiling,
      servers: servers.recorded,
      mapper: new UpdateMapper(prepared.acceptance, {
        preview: (tool, args) => wholeChange(workspace.root, tool, args),
        window: setup.context.window,
      }),
      cancelled: false,
    };
    if (records.length > 0) session.handle = new EngineSession(prepared.run, true);
    sessions.set(sessionId, session);
    return session;
  }

  async function askPermission(sessionId: string, question: PermissionQuestion, signal: AbortSignal) {
    if (client === undefined) throw new Error("no client");
    const { request, options: offers, diff } = question;
    return client.request(
      "session/request_permission",
      {
        sessionId,
        toolCall: {
          toolCallId: request.callId,
          title:
            request.display?.command !== undefined
              ? `${request.tool}: ${request.display.command}`
              : request.tool,
          status: "pending",
          rawInput: {
            tool: request.tool,
            arguments: request.arguments,
            call_hash: request.callHash,
            reason: request.reason ?? null,
          },
          ...(diff !== undefined
            ? { content: [{ type: "diff", ...diff }], locations: [{ path: diff.path }] }
            : {}),
        },
        options: offers,
      },
      { cancellationSignal: signal },
    );
  }

  function modes(session: OpenSession): SessionModeState {
    return {
      currentModeId: session.mode,
      availableModes: WRITE_MODES.filter((mode) => withinCeiling(mode, session.ceiling)).map((mode) => ({
        id: mode,
        ...MODE_NAMES[mode],
      })),
    };
  }

  function announce(session: OpenSession): void {
    // After the response that names the session: a client routes updates by its id.
    setImmediate(() => {
      send(session.id, {
        sessionUpdate: "available_commands_update",
        availableCommands: [...ACP_COMMANDS, ...templateCommands(session.prepared.run.setup.extensions)],
      });
      const plan = session.mapper.plan();
      if (plan) send(session.id, plan);
    });
  }

  function known(sessionId: string): OpenSession {
    const session = sessions.get(sessionId);
    if (!session) throw RequestError.resourceNotFound(sessionId);
    return session;
  }

  /** A recorded session's journal, verified and trusted, or refused with the reason. */
  async function verified(workspace: OpenedWorkspace, sessionId: string): Promise<readonly AnyRecord[]> {
    validateSessionId(sessionId);
    if (!(await workspace.store.exists(sessionId))) throw RequestError.resourceNotFound(sessionId);
    const result = await verifyJournal(join(workspace.sessionDir(sessionId), "events.jsonl"));
    if (!result.ok)
      throw new RequestError(
        -32002,
        `session ${sessionId} was refused: its journal does not verify: ${result.message}`,
        {
          code: "JOURNAL_REFUSED",
          reason: result.message,
        },
      );
    const reading = await workspace.store.readReport(sessionId);
    if (!reading.trust.trusted)
      throw new RequestError(-32002, `session ${sessionId} was refused: ${reading.trust.message}`, {
        code: "JOURNAL_UNTRUSTED",
        reason: reading.trust.message,
      });
    return reading.records;
  }

  async function applyMode(session: OpenSession, to: WriteMode): Promise<void> {
    const from = session.mode;
    if (from === to) return;
    if (session.handle?.started) {
      await recordModeSwitch(session.workspace.store, session.id, {
        from,
        to,
        ceiling: session.ceiling,
        by: "acp",
      });
    }
    session.mode = to;
    send(session.id, { sessionUpdate: "current_mode_update", currentModeId: to });
  }

  async function prompt(session: OpenSession, blocks: readonly ContentBlock[]): Promise<PromptResponse> {
    if (session.turn !== undefined)
      throw RequestError.invalidRequest({}, "a turn is already running in this session");
    const text = promptText(blocks);
    if (text.trim() === "") throw RequestError.invalidParams({}, "the prompt holds no text");
    session.handle ??= new EngineSession(
      {
        ...session.prepared.run,
        doorSetup: {
          mode: session.mode,
          ...(session.servers.length > 0 ? { editor_mcp_servers: session.servers } : {}),
        },
      },
      false,
    );
    const handle = session.handle;
    const command = commandOf(text);
    if (command !== undefined) {
      try {
        const answer = await runCommand(handle, command.name, command.args);
        send(session.id, {
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: answer.text },
        });
      } catch (error) {
        send(session.id, {
          sessionUpdate: "agent_message_chunk",
          content: {
            type: "text",
            text: `/${command.name}: ${error instanceof Error ? error.message : String(error)}`,
          },
        });
      }
      return { stopReason: "end_turn" };
    }
    // `/NAME args` naming a loaded template: expanded as every door expands it (the expanded text
    // is the turn's recorded input, command.expanded before it). One naming a template that is
    // not loaded is answered with why, never sent to the model as typed.
    const extensions = session.prepared.run.setup.extensions;
    const found = extensions ? expandCommandLine(text, extensions) : undefined;
    if (found?.kind === "refused") {
      send(session.id, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: found.message },
      });
      return { stopReason: "end_turn" };
    }
    const listener: EngineListener = {
      record: (record) => {
        for (const update of session.mapper.record(record)) send(session.id, update);
      },
      stream: (event) => {
        if (event.type === "text_delta" && event.text !== "")
          send(session.id, session.mapper.text(event.text));
      },
    };
    session.cancelled = false;
    const turn =
      found?.kind === "expanded"
        ? handle.turn(found.expanded.text, listener, { command: found.expanded.command })
        : handle.turn(text, listener);
    session.turn = turn;
    try {
      const summary = await turn.done;
      return { stopReason: stopReasonOf(summary, session.cancelled) };
    } finally {
      session.turn = undefined;
      const pending = session.pendingMode;
      session.pendingMode = undefined;
      if (pending !== undefined)
        await applyMode(session, pending).catch((error: unknown) => options.log(String(error)));
    }
  }

  return agent({ name: "harness" })
    .onRequest("initialize", ({ params, client: context }) => {
      capabilities = params.clientCapabilities ?? {};
      client = context;
      options.log(
        `editor connected (fs: ${capabilities.fs ? "offered, not used" : "no"}, terminal: ${capabilities.terminal ? "offered, not used" : "no"})`,
      );
      return {
        protocolVersion: PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: true,
          promptCapabilities: { image: false, audio: false, embeddedContext: true },
          mcpCapabilities: { http: false, sse: false },
          sessionCapabilities: { list: {}, resume: {}, close: {} },
        },
        agentInfo: { name: "harness", title: "harness", version: harnessVersion() },
        // Keys come from the environment a profile names (never through the editor).
        authMethods: [],
      };
    })
    .onRequest("authenticate", () => ({}))
    .onRequest("session/new", async ({ params }) => {
      const servers = editorServers(params.mcpServers);
      const workspace = await workspaceFor(params.cwd);
      let id = newSessionId();
      while (await workspace.store.exists(id)) id = newSessionId();
      const session = await open(workspace, id, [], servers);
      announce(session);
      return { sessionId: id, modes: modes(session) };
    })
    .onRequest("session/load", async ({ params }) => {
      const servers = editorServers(params.mcpServers);
      const workspace = await workspaceFor(params.cwd);
      const records = await verified(workspace, params.sessionId);
      await sessions.get(params.sessionId)?.handle?.close();
      const session = await open(workspace, params.sessionId, records, servers);
      // The history as the journal holds it, before the response (the protocol's order).
      const replay = new UpdateMapper(session.prepared.acceptance);
      for (const record of records)
        for (const update of replay.record(record))
          await client?.notify("session/update", { sessionId: session.id, update });
      announce(session);
      return { modes: modes(session) };
    })
    .onRequest("session/resume", async ({ params }) => {
      const servers = editorServers(params.mcpServers ?? []);
      const workspace = await workspaceFor(params.cwd);
      const records = await verified(workspace, params.sessionId);
      const session =
        sessions.get(params.sessionId) ?? (await open(workspace, params.sessionId, records, servers));
      announce(session);
      return { modes: modes(session) };
    })
    .onRequest("session/list", async ({ params }) => {
      const workspace = await workspaceFor(params.cwd ?? options.workspace ?? process.cwd());
      const rows = await sessionRows(workspace.store);
      return {
        sessions: rows.map((row) => ({
          sessionId: row.session,
          cwd: workspace.root,
          title: row.goal.slice(0, 120),
          ...(row.started !== null ? { updatedAt: row.started } : {}),
          _meta: { status: row.status },
        })),
      };
    })
    .onRequest("session/close", async ({ params }) => {
      const session = known(params.sessionId);
      session.cancelled = true;
      session.turn?.interrupt();
      await session.turn?.done.catch(() => undefined);
      await session.handle?.close();
      sessions.delete(params.sessionId);
      return {};
    })
    .onRequest("session/set_mode", async ({ params }) => {
      const session = known(params.sessionId);
      const to = params.modeId;
      if (!isWriteMode(to)) throw RequestError.invalidParams({ modeId: to }, `unknown mode ${to}`);
      if (!withinCeiling(to, session.ceiling))
        throw RequestError.invalidParams(
          { modeId: to, ceiling: session.ceiling },
          `mode ${to} would loosen the session past its configuration (at most ${session.ceiling})`,
        );
      if (session.turn !== undefined) session.pendingMode = to;
      else await applyMode(session, to);
      return {};
    })
    .onRequest("session/prompt", async ({ params }) => prompt(known(params.sessionId), params.prompt))
    .onNotification("session/cancel", ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (!session) return;
      session.cancelled = true;
      session.turn?.interrupt();
    });
}

/** The prompt's words: text blocks, and embedded text resources (an editor's selection or file). */
function promptText(blocks: readonly ContentBlock[]): string {
  const parts: string[] = [];
  for (const block of blocks) {
    if (block.type === "text") parts.push(block.text);
    else if (block.type === "resource" && "text" in block.resource)
      parts.push(`<context uri="${block.resource.uri}">\n${block.resource.text}\n</context>`);
    else if (block.type === "resource_link") parts.push(`(${block.uri})`);
  }
  return parts.join("\n");
}

/** The ACP stop reason of a finished turn. */
export function stopReasonOf(summary: RunSummary, cancelled: boolean): StopReason {
  if (cancelled || summary.status === "interrupted" || summary.status === "cancelled") return "cancelled";
  if (summary.reason === "budget_exhausted") return "max_turn_requests";
  if (summary.reason === "refusal" || summary.reason === "content_filter") return "refusal";
  return "end_turn";
}
