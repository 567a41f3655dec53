import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { TtyApprover } from "../../src/policy/tty-approver.js";
import { digestOf } from "../../src/shared/hash.js";
import { createShellTool } from "../../src/tools/shell/shell.js";

async function ask(answer: string | null) {
  const tool = createShellTool({ sandbox: { profile: "workspace-write" }, defaultTimeoutMs: 30_000 });
  const args = { command: "npm test -- --runInBand" };
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = "";
  output.on("data", (chunk: Buffer) => {
    shown += chunk.toString("utf8");
    if (shown.includes("?") || /\[y\/N/i.test(shown)) {
      if (answer === null) input.end();
      else input.write(`${answer}\n`);
    }
  });
  const approver = new TtyApprover(input, output, { timeoutMs: 5_000 });
  const decision = await approver.request(
    {
      callId: "c1",
      tool: "shell",
      effect: "process_execution",
      arguments: args,
      callHash: digestOf({ tool: "shell", arguments: args }),
      subject: { kind: "command", value: args.command },
      display: tool.approvalDetails?.(args) ?? {},
    },
    new AbortController().signal,
  );
  return { decision, shown };
}

describe("shell approvals on a terminal", () => {
  it("show the exact command, the cwd, the timeout and the sandbox profile", async () => {
    const { decision, shown } = await ask("yes");
    expect(shown).toContain("npm test -- --runInBand");
    expect(shown).toContain("30000");
    expect(shown).toContain("workspace-write");
    expect(shown).toMatch(/workspace/);
    expect(decision.decision).toBe("allow");
  });

  it.each([
    ["y", "allow"],
    ["Y E S", "deny"],
    ["", "deny"],
    ["n", "deny"],
    [null, "deny"],
  ])("answer %j → %s", async (answer, expected) => {
    const { decision } = await ask(answer);
    expect(decision.decision).toBe(expected);
  });
});
