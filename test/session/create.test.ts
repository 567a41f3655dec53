// The library's session: createSession/openSession set a session up as harness run does, print
// nothing, keep session approvals across an open, and operate on it (fork, undo, model switch).
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { FunctionApprover } from "../../src/policy/approver.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import type { ApprovalRequest } from "../../src/runtime/ports.js";
import { createSession, openSession, type SessionListener } from "../../src/session/create.js";
import { UsageError } from "../../src/session/usage-error.js";

let dir: string;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "harness-lib-"));
  await mkdir(join(dir, "ws"));
  // A user config of the test's own: two profiles the handle may switch between.
  const config = join(dir, "user.json");
  await writeFile(
    config,
    JSON.stringify({
      models: {
        small: { provider: "openai-compatible", model: "small-1", base_url: "http://127.0.0.1:9" },
        large: { provider: "openai-compatible", model: "large-1", base_url: "http://127.0.0.1:9" },
      },
    }),
  );
  env = { ...process.env, HARNESS_CONFIG: config };
});

afterEach(async () => {
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

/** A model that writes `name` with `text` on its first step of each turn, then finishes. */
function writer(files: Record<string, string>): ScriptedProvider {
  return ScriptedProvider.fromFunction((messages) => {
    const asked = [...messages].reverse().find((m) => m.role === "user");
    const turnText = typeof asked?.content === "string" ? asked.content : "";
    const name = Object.keys(files).find((file) => turnText.includes(file));
    const last = messages.at(-1);
    if (name !== undefined && last?.role === "user")
      return {
        text: `writing ${name}`,
        calls: [
          {
            id: `w-${name}-${messages.length}`,
            name: "write_file",
            arguments: { path: name, content: files[name] },
          },
        ],
      };
    return { text: "done" };
  }, "writer");
}

async function journal(sessionId: string): Promise<AnyRecord[]> {
  const text = await readFile(join(dir, "ws", ".harness", "sessions", sessionId, "events.jsonl"), "utf8");
  return text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as AnyRecord);
}

describe("createSession and openSession", () => {
  it("run a turn to verified, print nothing, and keep a session approval when the session is opened again", async () => {
    const stdout = vi.spyOn(process.stdout, "write");
    const stderr = vi.spyOn(process.stderr, "write");
    const asked: ApprovalRequest[] = [];
    const approver = new FunctionApprover(async (request) => {
      asked.push(request);
      if (asked.length > 1) throw new Error("asked again for a subject approved for the session");
      return { decision: "allow", scope: "session", decidedBy: "test" };
    });
    const notices: string[] = [];
    const listener: SessionListener = { notice: (notice) => notices.push(notice.message) };
    const files = { "a.txt": "one\n", "b.txt": "two\n" };
    const provider = writer(files);
    const session = await createSession(
      { write: "ask", shell: "deny", allow: ["write_file(b.txt)"], accept: ["test -f a.txt"] },
      { workspace: join(dir, "ws"), provider, approver, listener, env },
    );
    const first = await session.turn("write a.txt").done;
    expect(first.status).toBe("verified");
    await session.close();
    expect(await readFile(join(dir, "ws", "a.txt"), "utf8")).toBe("one\n");
    expect(asked.map((request) => request.tool)).toEqual(["write_file"]);

    // Opened again through the library: the approval "for this session" still holds.
    const again = await openSession(session.sessionId, {
      workspace: join(dir, "ws"),
      provider,
      approver,
      env,
    });
    expect(again.started).toBe(true);
    const second = await again.turn("write a.txt again").done;
    expect(second.status).toBe("verified");
    await again.close();
    expect(asked).toHaveLength(1);
    const records = await journal(session.sessionId);
    expect(records.filter((r) => r.type === "approval.requested")).toHaveLength(1);
    expect(records.filter((r) => r.type === "tool.result").map((r) => r.data.status)).toEqual(["ok", "ok"]);
    // The library wrote nothing to the terminal.
    expect(stdout).not.toHaveBeenCalled();
    expect(stderr).not.toHaveBeenCalled();
  });

  it("forks, undoes and switches the model through the handle", async () => {
    const provider = writer({ "a.txt": "one\n" });
    const session = await createSession(
      { write: "allow", shell: "deny" },
      { workspace: join(dir, "ws"), provider, env },
    );
    // A turn is awaited as itself (the same as awaiting its `done`).
    expect((await session.turn("write a.txt")).status).toBe("unverified");
    const parent = session.sessionId;

    const undone = await session.undo({ kind: "turn", turn: 1 });
    expect(undone.outcomes.map((o) => o.outcome)).toContain("restored");
    expect(existsSync(join(dir, "ws", "a.txt"))).toBe(false);

    const child = await session.fork();
    expect(child).not.toBe(parent);
    expect(session.sessionId).toBe(child);
    expect((await journal(child)).some((r) => r.type === "session.forked")).toBe(true);

    const models = await session.models();
    expect(models.profiles.map((p) => p.name).sort()).toEqual(["large", "small"]);
    const switched = await session.switchModel("large");
    expect(switched).toMatchObject({ model: "large-1", profile: "large" });
    expect(session.model).toBe("large-1");
    await session.close();
  });

  it("stops a turn at its next safe point when the caller's signal aborts", async () => {
    const controller = new AbortController();
    let steps = 0;
    const provider = ScriptedProvider.fromFunction((messages) => {
      steps += 1;
      // The caller gives up while the model is answering: the call it proposes never runs.
      controller.abort();
      return {
        text: "writing",
        calls: [
          { id: `w-${messages.length}`, name: "write_file", arguments: { path: "late.txt", content: "x" } },
        ],
      };
    }, "aborting");
    const session = await createSession(
      { write: "allow", shell: "deny" },
      { workspace: join(dir, "ws"), provider, env, signal: controller.signal },
    );
    const summary = await session.turn("write late.txt").done;
    await session.close();
    expect(summary.status).toBe("cancelled");
    expect(steps).toBe(1);
    expect(existsSync(join(dir, "ws", "late.txt"))).toBe(false);
    expect((await journal(session.sessionId)).at(-1)?.type).toBe("run.cancelled");
  });

  it("keeps a resumed session's sandbox: a looser one is refused whatever door opens it", async () => {
    const provider = writer({});
    const session = await createSession(
      { write: "allow", shell: "deny", sandbox: "read-only" },
      { workspace: join(dir, "ws"), provider, env },
    );
    await session.turn("say hi").done;
    await session.close();
    const before = await journal(session.sessionId);
    await expect(
      openSession(session.sessionId, {
        workspace: join(dir, "ws"),
        provider,
        env,
        config: { sandbox: "workspace-write" },
      }),
    ).rejects.toThrow(
      /would give this resumed session's commands more access than it was started with \(read-only\)/,
    );
    expect(await journal(session.sessionId)).toEqual(before);
  });

  it("refuses a bad configuration or an existing id before anything is recorded", async () => {
    const provider = writer({});
    await expect(
      createSession({ write: "sometimes" } as never, { workspace: join(dir, "ws"), provider, env }),
    ).rejects.toThrow(/invalid session configuration: write/);
    await expect(
      createSession({ limits: { maxModelRequests: -1 } }, { workspace: join(dir, "ws"), provider, env }),
    ).rejects.toBeInstanceOf(UsageError);
    await expect(
      createSession({ contextWindow: 1e12 }, { workspace: join(dir, "ws"), provider, env }),
    ).rejects.toThrow(/contextWindow/);
    const sessions = join(dir, "ws", ".harness", "sessions");
    expect(existsSync(sessions) ? await readdir(sessions) : []).toEqual([]);

    const session = await createSession({ write: "allow" }, { workspace: join(dir, "ws"), provider, env });
    await session.turn("say hi").done;
    await session.close();
    await expect(
      createSession({}, { workspace: join(dir, "ws"), provider, env, sessionId: session.sessionId }),
    ).rejects.toThrow(/already exists/);
    await expect(
      openSession("20200101-000000-00000000", { workspace: join(dir, "ws"), provider, env }),
    ).rejects.toThrow(/no session/);
  });
});
