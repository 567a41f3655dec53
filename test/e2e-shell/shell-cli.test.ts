// The shell tool through the CLI: timeouts and interrupts kill the whole process tree, policy
// and sandbox refusals leave no effect, secrets stay out, and a crash's survivors die on resume.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  jsonSummary,
  ofType,
  onStdoutLine,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "../e2e/helpers.js";
import { eventually, liveSleeps, uniqueSleep } from "../shell/helpers.js";
import { outsideDir, startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SESSION = "shell";

/** A script whose first reply runs one shell command and whose second finishes. */
function shellScript(command: string, extra: Record<string, unknown> = {}) {
  return jsonScript([
    { text: "running", calls: [{ id: "sh", name: "shell", arguments: { command, ...extra } }] },
    { text: "done" },
  ]);
}

async function runShell(
  command: string,
  flags: string[],
  options: { env?: Record<string, string>; extra?: Record<string, unknown> } = {},
) {
  const workspace = await workspaceWith({});
  const script = await shellScript(command, options.extra);
  const child = startHarnessWith(
    ["run", "--script", script, "-w", workspace, "--session", SESSION, "--json", ...flags, "run a command"],
    options.env,
  );
  const result = await finished(child);
  const records = await readJournal(workspace, SESSION);
  const [shellResult] = ofType(records, "tool.result");
  return { workspace, result, records, shellResult: shellResult?.data };
}

describe("shell through the CLI", () => {
  it("a timeout kills the command and its background children", async () => {
    const duration = uniqueSleep(100);
    const { result, records, shellResult } = await runShell(
      `sleep ${duration} & sleep ${duration} & wait`,
      ["--shell", "allow"],
      { extra: { timeout_ms: 300 } },
    );
    expectExit(result, 0);
    expect(shellResult).toMatchObject({ call_id: "sh", status: "timeout", error_type: "TIMEOUT" });
    expect(ofType(records, "process.spawned")).toHaveLength(1);
    expect(await eventually(() => liveSleeps(duration).length === 0, 5_000)).toBe(true);
    expect(jsonSummary(result)).toMatchObject({ status: "unverified" });
  });

  for (const sandbox of ["workspace-write", "off"]) {
    it(`SIGINT during a long command (sandbox ${sandbox}): exit 130, tree gone, call cancelled`, async () => {
      const duration = uniqueSleep(200);
      const workspace = await workspaceWith({});
      const script = await shellScript(`sleep ${duration} & sleep ${duration}; echo never > after.txt`);
      const child = startHarnessWith([
        ...["run", "--script", script, "-w", workspace, "--session", SESSION, "--events"],
        ...["--shell", "allow", "--sandbox", sandbox, "run a long command"],
      ]);
      let interrupted = false;
      onStdoutLine(child, (line) => {
        const record = JSON.parse(line) as { type: string };
        if (record.type !== "process.spawned" || interrupted) return;
        interrupted = true;
        // Interrupt once the command's processes really exist.
        void eventually(() => liveSleeps(duration).length === 2, 5_000).then(() => child.kill("SIGINT"));
      });
      const result = await finished(child);
      expectExit(result, 130);
      expect(interrupted).toBe(true);
      expect(await eventually(() => liveSleeps(duration).length === 0, 5_000)).toBe(true);
      const records = await readJournal(workspace, SESSION);
      expect(records.at(-1)?.type).toBe("run.cancelled");
      const results = ofType(records, "tool.result");
      expect(results).toHaveLength(1);
      expect(results[0]?.data).toMatchObject({ call_id: "sh", status: "cancelled", error_type: "CANCELLED" });
      expect(existsSync(join(workspace, "after.txt"))).toBe(false);
    });
  }

  for (const flags of [["--shell", "deny"], []]) {
    it(`${flags.length ? "--shell deny" : "the non-TTY default"} denies the command`, async () => {
      const { workspace, result, records, shellResult } = await runShell("echo ran > marker.txt", flags);
      // The only change was the denied command: the run stops, naming the flag that allows it.
      expectExit(result, 2);
      expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "changes_denied" });
      expect(String(jsonSummary(result).message)).toContain("allow them (--shell allow)");
      expect(shellResult).toMatchObject({ call_id: "sh", status: "denied", error_type: "POLICY_DENIED" });
      expect(ofType(records, "tool.started")).toHaveLength(0);
      expect(existsSync(join(workspace, "marker.txt"))).toBe(false);
    });
  }

  it("the default sandbox refuses a write outside the workspace; --sandbox off allows it", async () => {
    const outside = await outsideDir();
    try {
      const target = join(outside.dir, "escaped.txt");
      const sandboxed = await runShell(`echo out > ${target}`, ["--shell", "allow"]);
      expectExit(sandboxed.result, 0);
      // /var is not even mounted in the sandbox: the directory does not exist there.
      expect(sandboxed.shellResult).toMatchObject({ status: "error", error_type: "PROCESS_ERROR" });
      expect(String(sandboxed.shellResult?.content)).toContain("No such file or directory");
      expect(existsSync(target)).toBe(false);
      // Where a host directory is visible (read-only), the refusal is a reported violation.
      const visible = await runShell("echo out > /usr/harness-escaped.txt", ["--shell", "allow"]);
      expect(visible.shellResult).toMatchObject({ status: "error", error_type: "SANDBOX_VIOLATION" });
      expect(String(visible.shellResult?.content)).toContain("Read-only file system");
      expect(existsSync("/usr/harness-escaped.txt")).toBe(false);

      const open = await runShell(`echo out > ${target}`, ["--shell", "allow", "--sandbox", "off"]);
      expectExit(open.result, 0);
      expect(open.shellResult).toMatchObject({ status: "ok" });
      expect(existsSync(target)).toBe(true);
    } finally {
      await outside.cleanup();
    }
  });

  for (const sandbox of ["workspace-write", "off"]) {
    it(`a secret in harness's environment is not visible to the command (sandbox ${sandbox})`, async () => {
      const canary = `canary-${uniqueSleep(1)}`;
      const { result, records, shellResult } = await runShell(
        `printf 'token=%s\\n' "\${HARNESS_TEST_TOKEN:-absent}"; env`,
        ["--shell", "allow", "--sandbox", sandbox],
        { env: { HARNESS_TEST_TOKEN: canary } },
      );
      expectExit(result, 0);
      expect(shellResult).toMatchObject({ status: "ok" });
      expect(String(shellResult?.content)).toContain("token=absent");
      expect(JSON.stringify(records)).not.toContain(canary);
    });
  }

  it("after a SIGKILL of an unsandboxed run, resume kills the surviving process and reports unknown", async () => {
    const duration = uniqueSleep(300);
    const workspace = await workspaceWith({});
    const script = await shellScript(`sleep ${duration} & sleep ${duration}`);
    const child = startHarnessWith([
      ...["run", "--script", script, "-w", workspace, "--session", SESSION, "--events"],
      ...["--shell", "allow", "--sandbox", "off", "run a long command"],
    ]);
    let killed = false;
    onStdoutLine(child, (line) => {
      if ((JSON.parse(line) as { type: string }).type !== "process.spawned" || killed) return;
      killed = true;
      void eventually(() => liveSleeps(duration).length === 2, 5_000).then(() => child.kill("SIGKILL"));
    });
    const crashed = await finished(child);
    expect(crashed.signal).toBe("SIGKILL");
    try {
      // Unsandboxed, nothing kills the group when harness dies: the survivors are real.
      expect(liveSleeps(duration).length).toBe(2);
      const before = await readJournal(workspace, SESSION);
      const [spawned] = ofType(before, "process.spawned");
      expect(spawned?.data).toMatchObject({ call_id: "sh", sandboxed: false });
      expect(ofType(before, "tool.result")).toHaveLength(0);

      expectExit(await harness(["unlock", SESSION, "--workspace", workspace]), 0);
      const resumed = await harness(["resume", SESSION, "--script", script, "-w", workspace, "--json"]);
      expectExit(resumed, 3);
      expect(jsonSummary(resumed)).toMatchObject({ status: "review_required", reason: "unknown_outcome" });
      expect(await eventually(() => liveSleeps(duration).length === 0, 5_000)).toBe(true);
      const after = await readJournal(workspace, SESSION);
      const results = ofType(after, "tool.result");
      expect(results).toHaveLength(1);
      expect(results[0]?.data).toMatchObject({
        call_id: "sh",
        status: "unknown",
        error_type: "UNKNOWN_OUTCOME",
      });
      // The shell and both sleeps.
      expect(results[0]?.data.data).toMatchObject({ killed_processes: 3 });
      expect(ofType(after, "tool.started")).toHaveLength(1);
      expect(after.at(-1)?.data).toMatchObject({ status: "review_required" });
    } finally {
      for (const pid of liveSleeps(duration)) process.kill(pid, "SIGKILL");
    }
  });
});
