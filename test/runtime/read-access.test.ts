// grep, glob and read_artifact reveal no more of a file than read_file may: the same policy
// and session grants decide, through the ToolContext's read-access port, without prompting.
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FunctionApprover } from "../../src/policy/approver.js";
import { pathResolverOf } from "../../src/policy/path-aliases.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import type { ScriptFunction } from "../../src/providers/scripted/script.js";
import { engineFor, tempWorkspace, type Workspace } from "../support/session.js";
import { ofType, resultOf, results } from "./helpers.js";

const SECRET = "TOKEN_ONLY_IN_DOTENV_4242";
/** Matches the secret without containing it (call arguments are journaled). */
const SECRET_PATTERN = "TOKEN_ONLY_IN_DOTENV_\\d+";
let ws: Workspace | undefined;
afterEach(async () => ws?.cleanup());

async function journalText(workspace: Workspace): Promise<string> {
  return JSON.stringify(await workspace.journal());
}

function policyOf(workspace: Workspace, flags: Parameters<typeof modePolicy>[0]) {
  const port = modePolicy(flags, undefined, pathResolverOf(workspace.fs));
  return { describe: port.describe, digest: port.digest, permissions: port };
}

function calls(...list: { id: string; name: string; arguments: Record<string, unknown> }[]) {
  return { calls: list };
}

describe("grep searches only what read_file may read", () => {
  it("does not search a secret file whose read asks, nor a symlink to it, and keeps the secret out of the journal", async () => {
    ws = await tempWorkspace({ ".env": `API=${SECRET}\n`, "src/a.ts": "const x = 1;\n" });
    await symlink(".env", join(ws.root, "env-link"));
    const engine = engineFor(ws, {
      turns: [
        calls(
          { id: "g1", name: "grep", arguments: { pattern: SECRET_PATTERN } },
          { id: "g2", name: "grep", arguments: { pattern: SECRET_PATTERN, path: "env-link" } },
          { id: "g3", name: "grep", arguments: { pattern: "const" } },
        ),
        { text: "done" },
      ],
      extra: { policy: policyOf(ws, {}) },
    });
    await engine.run();
    const all = await results(ws);
    expect(resultOf(all, "g1").content).toContain("(no matches)");
    expect(resultOf(all, "g1").content).toContain("2 files not searched");
    // Naming the symlink is naming .env: the call itself needs the approval nobody gave.
    expect(resultOf(all, "g2")).toMatchObject({ status: "denied", error_type: "USER_DENIED" });
    expect(resultOf(all, "g3").content).toContain("src/a.ts:1:const x = 1;");
    expect(await journalText(ws)).not.toContain(SECRET);
  });

  it("does not search a file a deny rule covers, and searches it once read_file may read it", async () => {
    ws = await tempWorkspace({ "config/secret.txt": `key ${SECRET}\n` });
    const denied = engineFor(ws, {
      session: "denied",
      turns: [calls({ id: "g", name: "grep", arguments: { pattern: SECRET_PATTERN } }), { text: "done" }],
      extra: { policy: policyOf(ws, { deny: ["read_file(config/**)"] }) },
    });
    await denied.run();
    expect(resultOf(await results(ws, "denied"), "g").content).toContain("(no matches)");
    expect(JSON.stringify(await ws.journal("denied"))).not.toContain(SECRET);

    // The control: with no rule against it, the same search finds the line.
    const allowed = engineFor(ws, {
      session: "allowed",
      turns: [calls({ id: "g", name: "grep", arguments: { pattern: SECRET_PATTERN } }), { text: "done" }],
      extra: { policy: policyOf(ws, {}) },
    });
    await allowed.run();
    expect(resultOf(await results(ws, "allowed"), "g").content).toContain(
      `config/secret.txt:1:key ${SECRET}`,
    );
  });

  it("searches a secret file once the user approved reading it for the session", async () => {
    ws = await tempWorkspace({ ".env": `API=${SECRET}\n` });
    const approver = new FunctionApprover(() => ({ decision: "allow", scope: "session" }), "tester");
    const engine = engineFor(ws, {
      approver,
      turns: [
        calls({ id: "r", name: "read_file", arguments: { path: ".env" } }),
        calls({ id: "g", name: "grep", arguments: { pattern: "API" } }),
        { text: "done" },
      ],
      extra: { policy: policyOf(ws, {}) },
    });
    await engine.run();
    expect(resultOf(await results(ws), "g").content).toContain(`.env:1:API=${SECRET}`);
  });
});

describe("glob lists names, but not what a deny rule covers", () => {
  it("lists a secret whose read asks, and leaves out a denied file and a symlink to it", async () => {
    ws = await tempWorkspace({ ".env": "A=1\n", "private/key.txt": "k\n", "src/a.ts": "x\n" });
    await symlink("private/key.txt", join(ws.root, "key-link"));
    const engine = engineFor(ws, {
      turns: [calls({ id: "l", name: "glob", arguments: { pattern: "**/*" } }), { text: "done" }],
      extra: { policy: policyOf(ws, { deny: ["read_file(private/**)"] }) },
    });
    await engine.run();
    const listed = resultOf(await results(ws), "l").content.split("\n");
    expect(listed).toContain(".env");
    expect(listed).toContain("src/a.ts");
    expect(listed.some((line) => line.includes("key"))).toBe(false);
  });
});

describe("read_artifact re-checks the file an artifact holds", () => {
  const big = `${"x".repeat(2000)}\nTAIL=${SECRET}\n`;
  /** Small enough that a read of .env is stored as an artifact with a preview of its start. */
  const limits = { previewLimitBytes: 1024 };
  /** Read .env (too large to show inline), then read its artifact. */
  const script: ScriptFunction = (messages, step) => {
    if (step === 0) return { calls: [{ id: "r", name: "read_file", arguments: { path: ".env" } }] };
    if (step === 1) {
      const last = messages.at(-1);
      const id = /stored as artifact ([0-9a-f]{64})/.exec(
        typeof last?.content === "string" ? last.content : "",
      )?.[1];
      return { calls: [{ id: "a", name: "read_artifact", arguments: { id, offset: 1900 } }] };
    }
    return { text: "done" };
  };

  it("refuses an artifact of a secret file read with a once-only approval", async () => {
    ws = await tempWorkspace({ ".env": big });
    const approver = new FunctionApprover(() => ({ decision: "allow", scope: "once" }), "tester");
    await engineFor(ws, { approver, script, limits, extra: { policy: policyOf(ws, {}) } }).run();
    const all = await results(ws);
    expect(resultOf(all, "r").status).toBe("ok");
    expect(resultOf(all, "r").artifact).toBeDefined();
    expect(resultOf(all, "a")).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
    expect(resultOf(all, "a").summary).toContain(".env");
    // The preview held the start of the file; the part only the artifact had never reached the journal.
    expect(await journalText(ws)).not.toContain(SECRET);
    expect(ofType(await ws.journal(), "approval.requested")).toHaveLength(1);
  });

  it("reads it when the approval covers the session", async () => {
    ws = await tempWorkspace({ ".env": big });
    const approver = new FunctionApprover(() => ({ decision: "allow", scope: "session" }), "tester");
    await engineFor(ws, { approver, script, limits, extra: { policy: policyOf(ws, {}) } }).run();
    const all = await results(ws);
    expect(resultOf(all, "a").status).toBe("ok");
    expect(resultOf(all, "a").content).toContain(SECRET);
  });
});
