import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commandHook } from "../../src/policy/command-hook.js";
import { HookRunner } from "../../src/policy/hooks.js";
import type { HookCallContext } from "../../src/runtime/ports.js";
import { filterEnvironment } from "../../src/sandbox/env.js";
import { Executor } from "../../src/sandbox/executor.js";
import { NoSandbox } from "../../src/sandbox/none.js";

let workspace: string;
const env = { PATH: process.env.PATH, HOME: "/nonexistent", OPENAI_API_KEY: "sk-secret-value", LC_ALL: "C" };
const input: HookCallContext = {
  session: "sess-1",
  callId: "call_7",
  tool: "edit_file",
  arguments: { path: "src/a.ts", old_text: "x", new_text: "y" },
  effect: "local_write",
};

beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), "harness-hook-"));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

function runner(command: string, kind: "admit" | "notify" = "admit", timeoutMs = 10_000) {
  return new HookRunner([
    commandHook({
      kind,
      point: kind === "admit" ? "before_execute" : "after_execute",
      command,
      name: "ext",
      timeoutMs,
      cwd: workspace,
      // The hook protocol itself, without a sandbox (test/policy/command-hook-sandbox.test.ts
      // covers the default read-only profile).
      executor: new Executor({ environment: env }),
      profile: { sandbox: new NoSandbox(), env: {} },
    }),
  ]);
}

/** Alive means running: a zombie waiting to be reaped is already dead. */
async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function eventuallyDead(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (!(await isAlive(pid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

describe("external command hooks", () => {
  it("sends the call as JSON on stdin, runs in the workspace, and reads an allow answer on exit 0", async () => {
    const outcome = await runner(`cat > stdin.json; echo '{"decision":"allow","reason":"looks fine"}'`).admit(
      "before_execute",
      input,
    );
    expect(outcome).toMatchObject({
      allowed: true,
      records: [{ hook: "ext", decision: "allow", reason: "looks fine" }],
    });
    expect(JSON.parse(await readFile(join(workspace, "stdin.json"), "utf8"))).toEqual({
      point: "before_execute",
      session: "sess-1",
      call_id: "call_7",
      tool: "edit_file",
      arguments: { path: "src/a.ts", old_text: "x", new_text: "y" },
      effect: "local_write",
    });
  });

  it("denies on exit 0 with a deny answer", async () => {
    const outcome = await runner(`echo '{"decision":"deny","reason":"generated file"}'`).admit(
      "before_execute",
      input,
    );
    expect(outcome).toMatchObject({ allowed: false, hook: "ext", reason: "generated file" });
  });

  it("denies on exit 2 with stderr as the reason", async () => {
    const outcome = await runner(`echo 'protected path' >&2; exit 2`).admit("before_execute", input);
    expect(outcome).toMatchObject({
      allowed: false,
      reason: "protected path",
      records: [{ decision: "deny" }],
    });
  });

  it.each([
    [`echo '{"decision":"allow"}'; exit 1`, /exited with status 1/],
    [`echo 'sure, go ahead'`, /not a JSON answer/],
    [`echo '{"decision":"maybe"}'`, /malformed answer/],
    [`echo '["allow"]'`, /malformed answer/],
    [`kill -9 $$`, /killed by SIGKILL/],
    [`exec /nonexistent/binary`, /exited with status 127/],
    [`head -c 70000 /dev/zero; echo '{"decision":"allow"}'`, /wrote more than 65536 bytes to stdout/],
  ])("denies (fail closed) for %s", async (command, reason) => {
    const outcome = await runner(command).admit("before_execute", input);
    expect(outcome.allowed).toBe(false);
    expect(outcome.records).toEqual([
      expect.objectContaining({ decision: "error", reason: expect.stringMatching(reason) }),
    ]);
  });

  it("denies on timeout and kills the hook's whole process group", async () => {
    const command = `echo $$ > leader.pid; sleep 60 & echo $! > child.pid; wait`;
    const outcome = await runner(command, "admit", 1_000).admit("before_execute", input);
    expect(outcome).toMatchObject({ allowed: false, reason: "timed out after 1000 ms" });
    const leader = Number(await readFile(join(workspace, "leader.pid"), "utf8"));
    const child = Number(await readFile(join(workspace, "child.pid"), "utf8"));
    expect(await eventuallyDead(leader)).toBe(true);
    expect(await eventuallyDead(child)).toBe(true);
  });

  it("kills background children left behind when the hook exits", async () => {
    const command = `sleep 60 & echo $! > child.pid; echo '{"decision":"allow"}'`;
    const outcome = await runner(command).admit("before_execute", input);
    expect(outcome.allowed).toBe(true);
    const child = Number(await readFile(join(workspace, "child.pid"), "utf8"));
    expect(await eventuallyDead(child)).toBe(true);
  });

  it("passes only safe environment variables", async () => {
    await runner(`env > env.txt; echo '{"decision":"allow"}'`).admit("before_execute", input);
    const seen = await readFile(join(workspace, "env.txt"), "utf8");
    expect(seen).not.toContain("sk-secret-value");
    expect(seen).toContain("LC_ALL=C");
    expect(filterEnvironment(env)).toEqual({ PATH: process.env.PATH, HOME: "/nonexistent", LC_ALL: "C" });
  });

  it("as notify: observes on exit 0, records an error otherwise, never vetoes", async () => {
    const ok = await runner(`cat > seen.json`, "notify").notify("after_execute", {
      ...input,
      status: "ok",
    });
    expect(ok).toEqual([expect.objectContaining({ decision: "observed", kind: "notify" })]);
    expect(JSON.parse(await readFile(join(workspace, "seen.json"), "utf8"))).toMatchObject({
      point: "after_execute",
      status: "ok",
    });
    const failed = await runner(`exit 3`, "notify").notify("after_execute", input);
    expect(failed).toEqual([expect.objectContaining({ decision: "error", reason: "exited with status 3" })]);
  });
});
