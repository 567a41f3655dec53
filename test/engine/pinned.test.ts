import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { FileEqualsCheck } from "../../src/engine/acceptance.js";
import { COMPACTION_MARKER } from "../../src/engine/compaction.js";
import { type SessionEnvironment, systemText } from "../../src/engine/instructions.js";
import { SYSTEM_PROMPT } from "../../src/engine/system-prompt.js";
import { FunctionApprover } from "../../src/policy/approver.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import { ScopedPermissions, validateScope } from "../../src/policy/scope.js";
import type { Provider } from "../../src/providers/provider.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { ToolError } from "../../src/tools/errors.js";
import { defineTool } from "../../src/tools/tool.js";
import { reader } from "../support/reader.js";
import { Recording, run, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * What never fades: the system rules, the environment and task frame (acceptance checks, task
 * scope, permission rules), the project's and the user's instructions, nested instructions, the
 * goal, and every unresolved unknown outcome are sent verbatim in every request, however many
 * compactions replaced the turns around them.
 */

const USER_TEXT = "Always explain what you changed.";
const ROOT_TEXT = "Root rule: keep answers short.\n";
const NESTED_TEXT = "Nested rule: files under sub/ are read-only data.\n";
const FILES: Record<string, string> = { "AGENTS.md": ROOT_TEXT, "sub/AGENTS.md": NESTED_TEXT };
const PATHS: string[] = [];
for (let i = 0; i < 20; i += 1) {
  FILES[`sub/f${i}.txt`] = `${`file ${i}: `.repeat(240)}\n`;
  PATHS.push(`sub/f${i}.txt`);
}
const GOAL = "read every file under sub/ in turn";
const ENV: SessionEnvironment = {
  os: "linux (x64)",
  shell_program: "bash",
  sandbox: "workspace-write",
  write: "allow",
  shell: "deny",
  read_only: false,
};

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace(FILES);
});
afterEach(async () => ws.cleanup());

describe("the pinned set", () => {
  it("after five compactions the last request carries every pinned item byte for byte", async () => {
    const inner = modePolicy({
      write: "allow",
      shell: "deny",
      deny: ["read_file(secrets/**)"],
      allow: ["glob(**)"],
    });
    const scope = await validateScope(
      { readPaths: [...PATHS, "AGENTS.md", "sub/AGENTS.md"], editPaths: [] },
      ws.fs,
    );
    const permissions = new ScopedPermissions(inner, scope, () => "path");
    const model = new Recording(reader(120));
    const summary = await run(ws, {
      provider: model,
      goal: GOAL,
      acceptance: [new FileEqualsCheck(ws.fs, "sub/f0.txt", FILES["sub/f0.txt"]!)],
      limits: {
        contextWindowTokens: 10_000,
        replyReserveTokens: 1_000,
        maxModelRequests: 1_000,
        maxToolCalls: 1_000,
      },
      extra: {
        instructions: {
          user: { path: "~/.config/harness/AGENTS.md", bytes: new TextEncoder().encode(USER_TEXT) },
          workspace: true,
        },
        environment: ENV,
        policy: {
          describe: { ...inner.describe, scope: scope.describe() },
          digest: inner.digest,
          permissions,
        },
      },
    });
    expect(summary.status).toBe("verified");
    const compactions = await ws.events("context.compacted");
    expect(compactions.length).toBeGreaterThanOrEqual(5);

    const ordinary = model.requests.filter((r) => r.purpose === undefined);
    const last = ordinary.at(-1)!;
    const system = String(last.messages[0]!.content);
    // Each item as a user would write it down, not as the code builds it.
    const acceptanceLine = `- Acceptance checks: when you reply without tool calls, the host runs ${JSON.stringify(
      `file sub/f0.txt equals ${JSON.stringify(FILES["sub/f0.txt"])}`,
    )} in the workspace; the task is verified only if every one exits 0.`;
    const scopeLine = `- Task scope: you may read only ${["AGENTS.md", "sub/AGENTS.md", ...PATHS]
      .sort()
      .map((p) => JSON.stringify(p))
      .join(", ")} and change only nothing; shell commands are denied.`;
    const pinned = [
      SYSTEM_PROMPT,
      "- Write mode: allow: file writes inside the workspace are allowed.",
      "- Shell mode: deny: shell commands are denied; use the file tools.",
      acceptanceLine,
      scopeLine,
      "deny read_file(secrets/**)",
      "allow glob(**)",
      "ask *(**/.env) (default)",
      `<instructions>\n${USER_TEXT}\n</instructions>`,
      `<instructions>\n${ROOT_TEXT}\n</instructions>`,
    ];
    for (const item of pinned) expect(system).toContain(item);
    // Every request, compaction requests too, starts with the same system message.
    for (const request of model.requests) expect(request.messages[0]).toEqual(last.messages[0]);
    expect(last.messages[1]).toEqual({ role: "user", content: GOAL });
    expect(String(last.messages[2]!.content)).toContain(`<instructions>\n${NESTED_TEXT}\n</instructions>`);
    expect(last.messages[3]).toEqual({
      role: "user",
      content: `[Summary of the earlier conversation]\n${(compactions.at(-1)!.data as { summary: string }).summary}`,
    });
    // The task frame is recorded with the environment: the journal, not this process, is the source.
    const started = (await ws.events("session.started"))[0]!.data as { environment?: { task?: unknown } };
    expect(started.environment?.task).toMatchObject({
      acceptance: [`file sub/f0.txt equals ${JSON.stringify(FILES["sub/f0.txt"])}`],
      rules: expect.arrayContaining(["deny read_file(secrets/**)", "allow glob(**)"]),
    });
  }, 120_000);

  it("a call whose outcome cannot be known stops the run; compacting keeps it pinned, and a review shows up at once", async () => {
    // A tool that loses track of its effect mid-call (as an MCP tool whose server died does).
    let sent = 0;
    const lost = defineTool({
      name: "remote_change",
      description: "changes something elsewhere",
      version: "1",
      input: z.strictObject({ what: z.string() }),
      effect: "external_side_effect",
      idempotency: "non_idempotent",
      timeoutMs: 5_000,
      resources: () => ({ exclusive: true }),
      concurrencySafe: () => false,
      async execute() {
        sent += 1;
        throw new ToolError("UNKNOWN_OUTCOME", "the server went away before answering");
      },
    });
    const turns = (_messages: unknown, step: number) =>
      step < 3
        ? { calls: [{ id: `read-${step}`, name: "read_file", arguments: { path: `sub/f${step}.txt` } }] }
        : step === 3
          ? { calls: [{ id: "remote", name: "remote_change", arguments: { what: "deploy" } }] }
          : { text: "done" };
    const approveAll = new FunctionApprover(() => true, "tester");
    const options = (provider: Provider, extra = {}) => ({
      provider,
      goal: GOAL,
      tools: [...createFileTools(), lost],
      approver: approveAll,
      limits: { maxModelRequests: 50, maxToolCalls: 50 },
      extra,
    });
    const first = new Recording(ScriptedProvider.fromFunction(turns, "s"));
    const stopped = await run(ws, { ...options(first), write: "allow" });
    expect(stopped).toMatchObject({ status: "review_required", reason: "unknown_outcome" });
    // Stopped at once: no request after the batch whose outcome is unknown, and no second attempt.
    expect(first.requests).toHaveLength(4);
    expect(sent).toBe(1);

    // harness compact on the stopped session: the unknown call is pinned verbatim after it.
    const summaries = new Recording(
      ScriptedProvider.fromFunction(
        (messages) =>
          String(messages.at(-1)?.content).startsWith(COMPACTION_MARKER)
            ? { text: "Read three files, then asked for a deploy." }
            : { text: "unexpected" },
        "s",
      ),
    );
    const compacted = await run(ws, { ...options(summaries, { compactOnly: {} }), write: "allow" });
    expect(compacted.compacted).toBeDefined();
    // An unknown outcome always belongs to the session's last turn (the run stops at it), which a
    // compaction keeps whole: the call and its result survive verbatim after the summary.
    const asked = summaries.requests[0]!.messages.find((m) => m.role === "tool" && m.call_id === "remote");
    const unknownText = asked?.role === "tool" ? String(asked.content) : "";
    expect(unknownText).toContain("the server went away before answering");
    // A person resolves it; the very next request tells the model, next to the pinned note.
    const writer = await ws.store.openWriter("s", { create: false });
    await writer.append([
      {
        type: "review.resolved",
        data: {
          call_id: "remote",
          resolution: "not_applied",
          evidence: "the deploy log is empty",
          by: "ana",
        },
      },
    ]);
    await writer.close();
    const resumed = new Recording(ScriptedProvider.fromFunction(() => ({ text: "done" }), "s"));
    expect(summaries.requests).toHaveLength(1);
    expect(summaries.requests[0]!.tools).toEqual([]);
    expect(summaries.requests[0]!.messages.some((m) => m.role === "tool" && m.call_id === "remote")).toBe(
      true,
    );
    const after = await run(ws, { ...options(resumed), write: "allow" });
    expect(after.status).toBe("unverified");
    const request = resumed.requests[0]!;
    expect(request.messages[2]).toEqual({
      role: "user",
      content: "[Summary of the earlier conversation]\nRead three files, then asked for a deploy.",
    });
    expect(request.messages.some((m) => m.role === "tool" && m.call_id === "read-0")).toBe(false);
    const result = request.messages.find((m) => m.role === "tool" && m.call_id === "remote");
    expect(result?.role === "tool" && result.content).toBe(
      `${unknownText}\n[Review by ana: the operation was verified NOT to have taken effect; it may be done again if still needed. Evidence: the deploy log is empty]`,
    );
    expect(sent).toBe(1);
  });
});

describe("sessions recorded before the task frame", () => {
  it("state their environment exactly as before: no acceptance, scope or rule lines", () => {
    const text = systemText(SYSTEM_PROMPT, ENV, []);
    expect(text).toBe(
      `${SYSTEM_PROMPT}\n\nEnvironment of this session:\n` +
        "- Operating system: linux (x64); shell: bash.\n" +
        "- Sandbox profile: workspace-write: commands run in a sandbox that may write only inside the workspace (and a private /tmp).\n" +
        "- Write mode: allow: file writes inside the workspace are allowed.\n" +
        "- Shell mode: deny: shell commands are denied; use the file tools.",
    );
  });
});
