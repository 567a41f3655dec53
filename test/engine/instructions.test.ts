import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EngineError } from "../../src/engine/errors.js";
import type { SessionEnvironment, StartInstructions } from "../../src/engine/instructions.js";
import { SYSTEM_PROMPT } from "../../src/engine/system-prompt.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import type { ModelMessage } from "../../src/protocol/types.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import type { ScriptFunction } from "../../src/providers/scripted/script.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { WorkspaceError } from "../../src/workspace/fs.js";
import { lastVersion, Recording, run, tempWorkspace, type Workspace } from "../support/session.js";

let ws: Workspace;
afterEach(async () => ws.cleanup());

const USER_TEXT = "Answer in English.\nPrefer small commits.";
const ROOT_TEXT = "# Project rules\nRun `npm test` before finishing.\n";
const SRC_TEXT = "Files under src/ use two-space indentation.\n";
const user = (text = USER_TEXT): StartInstructions => ({
  user: { path: "~/.config/harness/AGENTS.md", bytes: new TextEncoder().encode(text) },
  workspace: true,
});
const ENV: SessionEnvironment = {
  os: "linux (x64)",
  shell_program: "bash",
  sandbox: "read-only",
  write: "propose",
  shell: "ask",
  read_only: false,
};

function recording(script: ScriptFunction): Recording {
  return new Recording(ScriptedProvider.fromFunction(script, "instructions-script"));
}
const systemOf = (messages: readonly ModelMessage[]) => messages[0]?.content;
const read = (id: string, path: string) => ({ calls: [{ id, name: "read_file", arguments: { path } }] });

describe("project instructions", () => {
  beforeEach(async () => {
    ws = await tempWorkspace({
      "AGENTS.md": ROOT_TEXT,
      "hello.txt": "helo\n",
      "src/AGENTS.md": SRC_TEXT,
      "src/a.ts": "export {};\n",
      "src/b.ts": "export {};\n",
      "src/deep/er/c.ts": "export {};\n",
    });
  });

  it("sends the environment, the user's and the root's instructions verbatim in the system message of every request", async () => {
    const provider = recording((_m, step) => (step === 0 ? read("r1", "hello.txt") : { text: "done" }));
    const summary = await run(ws, { provider, extra: { instructions: user(), environment: ENV } });
    expect(summary.status).toBe("unverified");
    const expected =
      `${SYSTEM_PROMPT}\n\n` +
      "Environment of this session:\n" +
      "- Operating system: linux (x64); shell: bash.\n" +
      "- Sandbox profile: read-only: commands run in a read-only sandbox: they cannot change the workspace.\n" +
      "- Write mode: propose: file writes become proposals a person reviews later; the files on disk do not change.\n" +
      "- Shell mode: ask: each shell command needs a person's approval (it may be denied).\n" +
      "- Acceptance checks: none are configured; the host cannot verify the task, so the run ends unverified.\n" +
      "- Permission rules (deny wins over ask, ask over allow; a call no rule matches follows the modes above): " +
      "allow web_fetch (default); ask *(**/*.pem) (default); ask *(**/.env) (default); ask *(**/.env.*.local) (default); " +
      "ask *(**/.env.local) (default); ask *(**/id_ed25519) (default); ask *(**/id_rsa) (default).\n\n" +
      "Instructions from ~/.config/harness/AGENTS.md (the user's instructions for every project). Follow them; they cannot grant permissions.\n" +
      `<instructions>\n${USER_TEXT}\n</instructions>\n\n` +
      "Instructions from AGENTS.md (the project's instructions). Follow them; they cannot grant permissions.\n" +
      `<instructions>\n${ROOT_TEXT}\n</instructions>`;
    expect(provider.requests).toHaveLength(2);
    for (const request of provider.requests) expect(systemOf(request.messages)).toBe(expected);
    // The second request extends the first: same bytes up to where the first ended.
    expect(provider.requests[1]!.messages.slice(0, 2)).toEqual(provider.requests[0]!.messages);

    const [loaded, ...more] = await ws.events("instructions.loaded");
    expect(more).toEqual([]);
    expect(loaded?.data).toEqual({
      trigger: "start",
      files: [
        {
          source: "user",
          path: "~/.config/harness/AGENTS.md",
          sha256: sha256Hex(USER_TEXT),
          bytes: USER_TEXT.length,
          truncated: false,
          text: USER_TEXT,
        },
        {
          source: "workspace",
          path: "AGENTS.md",
          sha256: sha256Hex(ROOT_TEXT),
          bytes: ROOT_TEXT.length,
          truncated: false,
          text: ROOT_TEXT,
        },
      ],
    });
    const started = (await ws.events("session.started"))[0]?.data as { environment?: unknown };
    expect(started.environment).toEqual({
      ...ENV,
      task: {
        acceptance: [],
        rules: [
          "allow web_fetch (default)",
          "ask *(**/*.pem) (default)",
          "ask *(**/.env) (default)",
          "ask *(**/.env.*.local) (default)",
          "ask *(**/.env.local) (default)",
          "ask *(**/id_ed25519) (default)",
          "ask *(**/id_rsa) (default)",
        ],
      },
    });
  });

  it("loads a directory's AGENTS.md when a call first reads a file under it, and keeps sending it", async () => {
    const provider = recording((_m, step) =>
      step === 0
        ? read("r1", "src/a.ts")
        : step === 1
          ? read("r2", "src/b.ts")
          : step === 2
            ? read("r3", "src/deep/er/c.ts")
            : { text: "done" },
    );
    await run(ws, { provider, extra: { instructions: { workspace: true } } });
    const nested = `Instructions from src/AGENTS.md (instructions for files under src/). Follow them; they cannot grant permissions.\n<instructions>\n${SRC_TEXT}\n</instructions>`;
    const [first, second, third, fourth] = provider.requests.map((r) => r.messages);
    expect(first!.some((m) => m.content === nested)).toBe(false);
    // Right after the result of the read that reached src/, before the model's next turn.
    expect(second!.slice(2).map((m) => [m.role, m.content.slice(0, 20)])).toEqual([
      ["assistant", ""],
      ["tool", "path: src/a.ts\nversi"],
      ["user", nested.slice(0, 20)],
    ]);
    expect(second!.at(-1)).toEqual({ role: "user", content: nested });
    for (const messages of [third!, fourth!]) {
      expect(messages.filter((m) => m.content === nested)).toHaveLength(1);
      expect(messages.slice(0, second!.length)).toEqual(second);
    }
    const loads = (await ws.events("instructions.loaded")).map((r) => r.data);
    expect(loads).toEqual([
      { trigger: "start", files: [expect.objectContaining({ path: "AGENTS.md" })] },
      {
        trigger: "nested",
        files: [
          {
            source: "nested",
            path: "src/AGENTS.md",
            sha256: sha256Hex(SRC_TEXT),
            bytes: SRC_TEXT.length,
            truncated: false,
            text: SRC_TEXT,
          },
        ],
        checked: ["src"],
      },
      // Directories without their own file are looked at once and recorded as looked at.
      { trigger: "nested", files: [], checked: ["src/deep", "src/deep/er"] },
    ]);
  });

  it("a check an interruption left undone is done on resume; an edited nested file stays as loaded", async () => {
    const controller = new AbortController();
    const script: ScriptFunction = (messages, step) => {
      if (step === 0) return read("r1", "src/a.ts");
      if (step === 1) return read("r2", "src/AGENTS.md");
      if (step === 2) {
        const args = {
          path: "src/AGENTS.md",
          content: "new rules\n",
          expected_version: lastVersion(messages),
        };
        return { calls: [{ id: "w1", name: "write_file", arguments: args }] };
      }
      return { text: "done" };
    };
    const provider = recording(script);
    // Interrupted as the first read finishes: before the step's nested instructions are checked.
    const stopAfterRead = { callFinished: () => controller.abort() };
    const first = await run(ws, {
      provider,
      signal: controller.signal,
      extra: { instructions: { workspace: true }, listener: stopAfterRead },
    });
    expect(first.status).toBe("cancelled");
    expect(await ws.events("instructions.loaded")).toHaveLength(1);

    const summary = await run(ws, { provider, mode: "resume", extra: { instructions: { workspace: true } } });
    expect(summary.status).toBe("unverified");
    expect(await ws.file("src/AGENTS.md")).toBe("new rules\n");
    const nested = `Instructions from src/AGENTS.md (instructions for files under src/). Follow them; they cannot grant permissions.\n<instructions>\n${SRC_TEXT}\n</instructions>`;
    const [, second, , last] = provider.requests.map((r) => r.messages);
    // The resumed request is what an uninterrupted run sends: the result, then the file.
    expect(second!.at(-1)).toEqual({ role: "user", content: nested });
    expect(second!.at(-2)).toMatchObject({ role: "tool", call_id: "r1" });
    expect(last!.slice(0, second!.length)).toEqual(second);
    expect(last!.filter((m) => m.role === "user" && m.content.includes("<instructions>"))).toEqual([
      { role: "user", content: nested },
    ]);
    expect(last!.at(-1)).toMatchObject({ role: "tool", call_id: "w1", status: "ok" });
    const loads = (await ws.events("instructions.loaded")).map((r) => r.data as { trigger: string });
    expect(loads.map((data) => data.trigger)).toEqual(["start", "nested"]);
  });

  it("does not send a nested AGENTS.md the policy would not let read_file read", async () => {
    await writeFile(join(ws.root, "src/deep/AGENTS.md"), "secret rules\n");
    const policy = modePolicy({ write: "allow", deny: ["read_file(src/deep/AGENTS.md)"] });
    const provider = recording((_m, step) =>
      step === 0 ? read("r1", "src/deep/er/c.ts") : { text: "done" },
    );
    await run(ws, {
      provider,
      extra: {
        instructions: { workspace: true },
        policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
      },
    });
    const nested = (await ws.events("instructions.loaded")).slice(1).map((r) => r.data);
    expect(nested).toEqual([
      {
        trigger: "nested",
        files: [expect.objectContaining({ path: "src/AGENTS.md" })],
        checked: ["src", "src/deep", "src/deep/er"],
      },
    ]);
    expect(JSON.stringify(provider.requests.at(-1))).not.toContain("secret rules");
  });

  it("a root AGENTS.md that exists but cannot be read stops a new session before anything is recorded", async () => {
    const real = ws.fs;
    const fs = new Proxy(real, {
      get(target, key) {
        // The file is read in chunks (its digest is of the whole file, only its head is kept).
        if (key === "readChunks")
          return (path: string) => {
            if (path === "AGENTS.md")
              throw new WorkspaceError("IO_ERROR", path, "AGENTS.md: permission denied");
            return real.readChunks(path);
          };
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const provider = recording(() => ({ text: "done" }));
    const started = run(ws, { provider, runtime: { fs }, extra: { instructions: { workspace: true } } });
    await expect(started).rejects.toThrow(
      /AGENTS\.md at the workspace root cannot be read .*permission denied/,
    );
    expect(provider.requests).toEqual([]);
    expect(await ws.journal()).toEqual([]);
  });

  it("cuts a file over 32 KiB at the limit with a visible marker; the digest is of the whole file", async () => {
    const big = `${"x".repeat(32 * 1024 - 1)}é and more`;
    await writeFile(join(ws.root, "AGENTS.md"), big);
    const provider = recording(() => ({ text: "done" }));
    await run(ws, { provider, extra: { instructions: { workspace: true } } });
    const bytes = Buffer.byteLength(big);
    // The 2-byte é straddles the limit: it is dropped whole, never sent as a broken character.
    const text = `${"x".repeat(32 * 1024 - 1)}\n[harness: AGENTS.md is ${bytes} bytes; only its first 32768 bytes are included]`;
    const files = ((await ws.events("instructions.loaded"))[0]!.data as { files: unknown[] }).files;
    expect(files).toEqual([
      { source: "workspace", path: "AGENTS.md", sha256: sha256Hex(big), bytes, truncated: true, text },
    ]);
    expect(systemOf(provider.requests[0]!.messages)).toContain(`<instructions>\n${text}\n</instructions>`);
  });

  it("the agent editing AGENTS.md does not change what is pinned; a resume then refuses and appends nothing", async () => {
    const provider = recording((messages, step) => {
      if (step === 0) return read("r1", "AGENTS.md");
      if (step === 1) {
        const args = {
          path: "AGENTS.md",
          content: "Ignore the tests.\n",
          expected_version: lastVersion(messages),
        };
        return { calls: [{ id: "w1", name: "write_file", arguments: args }] };
      }
      return { text: "done" };
    });
    await run(ws, { provider, extra: { instructions: user() } });
    expect(await ws.file("AGENTS.md")).toBe("Ignore the tests.\n");
    expect(provider.requests).toHaveLength(3);
    const pinned = systemOf(provider.requests[0]!.messages);
    expect(pinned).toContain(`<instructions>\n${ROOT_TEXT}\n</instructions>`);
    for (const request of provider.requests) expect(systemOf(request.messages)).toBe(pinned);
    expect(JSON.stringify(provider.requests.at(-1)!.messages.slice(1, 2))).not.toContain("Ignore the tests");

    const before = await ws.journal();
    const resumed = run(ws, { provider, mode: "resume", extra: { instructions: user() } });
    await expect(resumed).rejects.toThrow(EngineError);
    await expect(resumed).rejects.toThrow(
      /project instructions \(AGENTS\.md changed\).*restore the instructions/,
    );
    expect(await ws.journal()).toEqual(before);
  });

  it("a changed user file refuses a resume too; unchanged files resume with the same system message", async () => {
    const provider = recording((_m, step) => (step === 0 ? read("r1", "hello.txt") : { text: "done" }));
    const first = await run(ws, { provider, limits: { maxToolCalls: 0 }, extra: { instructions: user() } });
    expect(first.reason).toBe("budget_exhausted");
    const calls = provider.requests.length;
    await expect(
      run(ws, { provider, mode: "resume", extra: { instructions: user("Answer in French.") } }),
    ).rejects.toThrow(/user instructions \(~\/\.config\/harness\/AGENTS\.md changed\)/);
    expect(provider.requests).toHaveLength(calls);
    const summary = await run(ws, { provider, mode: "resume", extra: { instructions: user() } });
    expect(summary.status).toBe("unverified");
    expect(systemOf(provider.requests.at(-1)!.messages)).toBe(systemOf(provider.requests[0]!.messages));
    expect(await ws.events("instructions.loaded")).toHaveLength(1);
  });

  it("a resume states the environment the session recorded, whatever the resuming setup says", async () => {
    const provider = recording((_m, step) => (step === 0 ? read("r1", "hello.txt") : { text: "done" }));
    const first = await run(ws, {
      provider,
      limits: { maxToolCalls: 0 },
      extra: { instructions: { workspace: true }, environment: ENV },
    });
    expect(first.reason).toBe("budget_exhausted");
    const tighter: SessionEnvironment = { ...ENV, write: "deny", shell: "deny", read_only: true };
    await run(ws, {
      provider,
      mode: "resume",
      extra: { instructions: { workspace: true }, environment: tighter },
    });
    expect(provider.requests).toHaveLength(2);
    const system = systemOf(provider.requests[1]!.messages);
    expect(system).toBe(systemOf(provider.requests[0]!.messages));
    expect(system).toContain("- Write mode: propose: file writes become proposals");
  });

  it("a session recorded before instructions existed resumes and is sent exactly what it was sent before", async () => {
    const provider = recording((_m, step) => (step === 0 ? read("r1", "src/a.ts") : { text: "done" }));
    // No instructions option: the journal has no instructions.loaded and no environment.
    const first = await run(ws, { provider, limits: { maxToolCalls: 0 } });
    expect(first.reason).toBe("budget_exhausted");
    const summary = await run(ws, {
      provider,
      mode: "resume",
      extra: { instructions: user(), environment: ENV },
    });
    expect(summary.status).toBe("unverified");
    for (const request of provider.requests) expect(systemOf(request.messages)).toBe(SYSTEM_PROMPT);
    expect(await ws.events("instructions.loaded")).toEqual([]);
    expect(provider.requests.at(-1)!.messages.some((m) => m.content.includes(SRC_TEXT))).toBe(false);
  });
});
