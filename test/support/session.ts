import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileArtifactStore } from "../../src/artifacts/file-store.js";
import { type AcceptanceCheck, FileEqualsCheck } from "../../src/engine/acceptance.js";
import { Engine } from "../../src/engine/engine.js";
import type { EngineOptions, RunSummary } from "../../src/engine/options.js";
import { FileJournalStore } from "../../src/journal/file-store.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import type { ModelRequest, Provider } from "../../src/providers/provider.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import type { ScriptFunction } from "../../src/providers/scripted/script.js";
import type { WriteMode } from "../../src/rules/modes.js";
import type { RuntimeEnvironment } from "../../src/runtime/environment.js";
import type { ApprovalPort } from "../../src/runtime/ports.js";
import { ToolRegistry } from "../../src/runtime/registry.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { createFileTools } from "../../src/tools/builtin.js";
import type { AnyTool } from "../../src/tools/tool.js";
import { DiskWorkspaceFs } from "../../src/workspace/disk-fs.js";

/** A provider wrapper that counts requests and keeps what was sent. */
export class Recording implements Provider {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly inner: Provider) {}
  get identity() {
    return this.inner.identity;
  }
  stream(request: ModelRequest, signal: AbortSignal) {
    this.requests.push(structuredClone(request));
    return this.inner.stream(request, signal);
  }
}

export const denyApprover: ApprovalPort = {
  async request() {
    return { decision: "deny", scope: "once", by: "test", reason: "no approver in tests" };
  },
};

export interface Workspace {
  root: string;
  fs: DiskWorkspaceFs;
  store: FileJournalStore;
  file(path: string): Promise<string>;
  journal(session?: string): Promise<AnyRecord[]>;
  events(type: string, session?: string): Promise<AnyRecord[]>;
  cleanup(): Promise<void>;
}

export async function tempWorkspace(files: Record<string, string> = {}): Promise<Workspace> {
  const root = await realpath(await mkdtemp(join(tmpdir(), "harness-test-")));
  const { writeFile, mkdir } = await import("node:fs/promises");
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), content);
  }
  await mkdir(join(root, ".harness", "sessions"), { recursive: true });
  const backend = new FileJournalStore(join(root, ".harness"));
  const ws: Workspace = {
    root,
    fs: await DiskWorkspaceFs.create(root),
    store: backend,
    file: (path) => readFile(join(root, path), "utf8"),
    journal: (session = "s") => backend.read(session),
    events: async (type, session = "s") => (await backend.read(session)).filter((r) => r.type === type),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
  return ws;
}

export interface RunOptions {
  provider?: Provider;
  turns?: unknown[];
  script?: ScriptFunction;
  goal?: string;
  write?: WriteMode;
  readOnly?: boolean;
  acceptance?: AcceptanceCheck[];
  session?: string;
  mode?: EngineOptions["mode"];
  limits?: EngineOptions["limits"];
  signal?: AbortSignal;
  tools?: AnyTool[];
  approver?: ApprovalPort;
  /** Added to (or replacing parts of) the runtime environment the helper builds. */
  runtime?: Partial<RuntimeEnvironment>;
  extra?: Partial<Omit<EngineOptions, "runtime">>;
}

export function scripted(options: Pick<RunOptions, "turns" | "script">): Provider {
  if (options.script) return ScriptedProvider.fromFunction(options.script, "test-script");
  return ScriptedProvider.fromTurns(options.turns ?? [], "test-turns");
}

export function engineFor(ws: Workspace, options: RunOptions = {}): Engine {
  const policy = modePolicy({ write: options.write ?? "allow", readOnly: options.readOnly ?? false });
  const registry = new ToolRegistry();
  for (const tool of options.tools ?? createFileTools()) registry.register(tool);
  const session = options.session ?? "s";
  return new Engine({
    sessionId: session,
    store: ws.store,
    provider: options.provider ?? scripted(options),
    runtime: {
      snapshot: registry.snapshot(),
      fs: ws.fs,
      hostRoot: ws.root,
      artifacts: new FileArtifactStore(join(ws.root, ".harness", "sessions", session, "artifacts")),
      approver: options.approver ?? denyApprover,
      ...options.runtime,
    },
    workspace: { name: "ws", fingerprint: sha256Hex(ws.root) },
    goal: options.goal ?? "fix hello.txt",
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: options.acceptance ?? [],
    limits: { modelRetryBaseMs: 1, modelRetryMaxMs: 5, ...options.limits },
    mode: options.mode ?? "auto",
    harnessVersion: "test",
    ...(options.signal ? { signal: options.signal } : {}),
    ...options.extra,
  });
}

export function run(ws: Workspace, options: RunOptions = {}): Promise<RunSummary> {
  return engineFor(ws, options).run();
}

export function helloAccepted(ws: Workspace): AcceptanceCheck {
  return new FileEqualsCheck(ws.fs, "hello.txt", "hello, harness\n");
}

/** Parse `version: <hex>` from the last tool observation a script received. */
export function lastVersion(messages: readonly { role: string; content?: unknown }[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "tool" && typeof m.content === "string") {
      const match = /^version: ([0-9a-f]{64})$/m.exec(m.content);
      if (match) return match[1];
    }
  }
  return undefined;
}

export function count(records: readonly AnyRecord[], type: string): number {
  return records.filter((r) => r.type === type).length;
}

/**
 * Simulate a crash after a write's intent was made durable: run the session until the model's
 * write call is recorded (tool budget 0), then append its `tool.started` by hand, as a process
 * killed right after the effect would leave it. Returns the script, to resume with.
 */
export async function startedWriteWithoutResult(ws: Workspace, content: string, finalText = "done") {
  const bytes = await readFile(join(ws.root, "hello.txt"));
  const args = { path: "hello.txt", content, expected_version: sha256Hex(bytes) };
  const script = (_m: unknown, step: number) =>
    step === 0 ? { calls: [{ id: "w", name: "write_file", arguments: args }] } : { text: finalText };
  const first = await run(ws, { script, limits: { maxToolCalls: 0 } });
  if (first.reason !== "budget_exhausted")
    throw new Error(`setup run ended ${first.status} (${first.reason})`);
  const writer = await ws.store.openWriter("s", { create: false });
  await writer.append([
    {
      type: "tool.started",
      data: {
        call_id: "w",
        name: "write_file",
        arguments: args,
        arguments_hash: "0".repeat(64),
        tool_version: "1",
        schema_digest: "0".repeat(64),
        effect: "local_write",
        batch: 0,
      },
    },
  ]);
  await writer.close();
  return script;
}
