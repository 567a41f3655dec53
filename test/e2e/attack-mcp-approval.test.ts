import { existsSync, readFileSync } from "node:fs";
import { appendFile, copyFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  FIXTURES,
  jsonSummary,
  ofType,
  pasteAsPrinted,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { recordingScript, run, userConfig } from "./mcp-run-support.js";

/*
 * An approval of a project's MCP server covers exactly what the user looked at: the workspace it
 * was given in (by real path), the definition, and the content of every file the definition runs.
 * A hostile repository that ships the same harness.config.json proposal (and the same server file
 * name) must not get its own server started by an approval given for another repository; an edit
 * to the server's file after approval must refuse the next start, including a restart mid-run.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const PROPOSAL = {
  mcp_servers: {
    proj: {
      command: process.execPath,
      args: ["./srv.mjs"],
      env: { RAW_MARK: "server-ran" },
    },
  },
};

/** A workspace proposing `proj`, which runs the workspace's own srv.mjs (it marks each start in server-ran). */
async function proposingWorkspace(): Promise<string> {
  const workspace = await workspaceWith({ "harness.config.json": JSON.stringify(PROPOSAL) });
  await copyFile(join(FIXTURES, "mcp-raw-server.mjs"), join(workspace, "srv.mjs"));
  return workspace;
}

const starts = (workspace: string): number =>
  existsSync(join(workspace, "server-ran"))
    ? readFileSync(join(workspace, "server-ran"), "utf8")
        .split("\n")
        .filter((l) => l === "start").length
    : 0;

async function runOk(workspace: string, env: NodeJS.ProcessEnv, model: string) {
  const result = await run(
    ["run", "--workspace", workspace, "--script", model, "--allow", "mcp__proj__*", "--json", "go"],
    env,
  );
  expectExit(result, 0);
  return result;
}

describe("an MCP server approval is bound to the workspace, the definition and the files it runs", () => {
  it("an approval given in workspace A does not start the same proposal in workspace B; the printed command approves it there", async () => {
    const a = await proposingWorkspace();
    const b = await proposingWorkspace();
    const { file, env } = await userConfig({});
    const model = await recordingScript({ name: "mcp__proj__ok", arguments: {} });

    const approve = await run(["mcp", "approve", "proj", "--workspace", a], env);
    expectExit(approve, 0);
    expect(approve.stdout).toContain("srv.mjs  sha256 ");
    expect(starts(a)).toBe(0);
    const saved = JSON.parse(await readFile(file, "utf8"));
    expect(saved.mcp_approvals.proj).toEqual([
      {
        workspace: a,
        definition: expect.stringMatching(/^[0-9a-f]{64}$/),
        files: expect.objectContaining({ [join(a, "srv.mjs")]: expect.stringMatching(/^[0-9a-f]{64}$/) }),
      },
    ]);

    const inA = await runOk(a, env, model.path);
    expect(starts(a)).toBe(1);
    expect(resultsByCall(await readJournal(a, String(jsonSummary(inA).session))).get("c1")).toMatchObject({
      status: "ok",
      content: "called ok",
    });

    // The same proposal, byte for byte, in another repository: never started there.
    const inB = await runOk(b, env, model.path);
    expect(starts(b)).toBe(0);
    expect(existsSync(join(b, "server-ran"))).toBe(false);
    expect(inB.stderr).toContain('the project proposes MCP server "proj"; it was not started');
    expect(inB.stderr).toContain("only in another workspace");
    const recordsB = await readJournal(b, String(jsonSummary(inB).session));
    const toolsB = (ofType(recordsB, "session.started")[0]!.data.tools as { name: string }[]).map(
      (t) => t.name,
    );
    expect(toolsB.some((name) => name.startsWith("mcp__"))).toBe(false);

    // `harness mcp list` in B says why, and what an approval there would bind.
    const list = await run(["mcp", "list", "--workspace", b, "--json"], env);
    expectExit(list, 0);
    expect(JSON.parse(list.stdout).servers[0]).toMatchObject({
      name: "proj",
      approved: false,
      starts: false,
      binding: {
        state: "workspace",
        workspace: b,
        files: expect.arrayContaining([{ path: "srv.mjs", sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]),
      },
    });

    // The command printed in the note works as printed, from another directory.
    const hint = /Review it and approve it with: (harness mcp approve .*)$/m.exec(inB.stderr)?.[1];
    expect(hint).toBe(`harness mcp approve proj --workspace ${b}`);
    const pasted = await pasteAsPrinted(hint!, await tempDir("harness-elsewhere-"), env);
    expectExit(pasted, 0);
    await runOk(b, env, model.path);
    expect(starts(b)).toBe(1);
    // Approving B kept A's approval.
    await runOk(a, env, model.path);
    expect(starts(a)).toBe(2);
    const listA = await run(["mcp", "list", "--workspace", a, "--json"], env);
    expect(JSON.parse(listA.stdout).servers[0].binding.state).toBe("approved");
  });

  it("a named file edited after approval refuses the next start, saying what changed and how to approve it", async () => {
    const workspace = await proposingWorkspace();
    const { env } = await userConfig({});
    const model = await recordingScript({ name: "mcp__proj__ok", arguments: {} });
    expectExit(await run(["mcp", "approve", "proj", "--workspace", workspace], env), 0);
    await runOk(workspace, env, model.path);
    expect(starts(workspace)).toBe(1);

    await appendFile(join(workspace, "srv.mjs"), "\n// one more line\n");
    const after = await runOk(workspace, env, model.path);
    expect(starts(workspace)).toBe(1);
    expect(after.stderr).toContain("srv.mjs was modified");
    expect(after.stderr).toContain(`harness mcp approve proj --workspace ${workspace}`);
    const list = await run(["mcp", "list", "--workspace", workspace], env);
    expect(list.stdout).toMatch(/^proj\s+project\s+NOT approved, does not start/m);
    expect(list.stdout).toContain("srv.mjs was modified");
    expect(list.stdout).toMatch(/runs srv\.mjs \(sha256 [0-9a-f]{64}\)/);

    // A `harness mcp test` of it is refused the same way, before anything runs.
    const tested = await run(["mcp", "test", "proj", "--workspace", workspace], env);
    expectExit(tested, 64);
    expect(tested.stderr).toContain("srv.mjs was modified");
    expect(starts(workspace)).toBe(1);
  });

  it("the approval is checked again before a restart: a file changed mid-run keeps the server from starting again", async () => {
    // Unsandboxed, as a proposal may say: the server's pid is then one the model script can watch.
    const workspace = await workspaceWith({
      "harness.config.json": JSON.stringify({
        // Trusted: an untrusted server's first result would make the second call ask a person
        // (untrusted content), and the restart check this test is about would never be reached.
        mcp_servers: { proj: { ...PROPOSAL.mcp_servers.proj, sandbox: "off", trusted: true } },
      }),
    });
    await copyFile(join(FIXTURES, "mcp-raw-server.mjs"), join(workspace, "srv.mjs"));
    const { env } = await userConfig({});
    expectExit(await run(["mcp", "approve", "proj", "--workspace", workspace], env), 0);
    // The first call makes the server exit; once it is gone the model's script edits its file (as
    // anything on the host could); the second call would restart it.
    const dir = await tempDir("harness-mcp-script-");
    const script = join(dir, "model.mjs");
    const srv = join(workspace, "srv.mjs");
    const mark = join(workspace, "server-ran");
    await writeFile(
      script,
      `import { appendFileSync, readFileSync } from "node:fs";
const gone = (pid) => { try { process.kill(pid, 0); return false; } catch { return true; } };
export default async function model(messages, step) {
  if (step === 0) return { text: "exit", calls: [{ id: "c1", name: "mcp__proj__exit", arguments: {} }] };
  if (step === 1) {
    const pid = Number(/pid (\\d+)/.exec(readFileSync(${JSON.stringify(mark)}, "utf8"))[1]);
    while (!gone(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 0));
    appendFileSync(${JSON.stringify(srv)}, "\\n// changed while the run goes on\\n");
    return { text: "again", calls: [{ id: "c2", name: "mcp__proj__ok", arguments: {} }] };
  }
  return { text: "done" };
}
`,
    );
    const result = await run(
      ["run", "--workspace", workspace, "--script", script, "--allow", "mcp__proj__*", "--json", "go"],
      env,
    );
    expect(starts(workspace)).toBe(1);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(resultsByCall(records).get("c1")).toMatchObject({ status: "ok" });
    const second = resultsByCall(records).get("c2")!;
    expect(second.status).not.toBe("ok");
    expect(JSON.stringify(second)).toContain("srv.mjs was modified");
    expect(JSON.stringify(second)).toContain("harness mcp approve proj --workspace");
  });

  it("an approval from before the binding (a bare digest) no longer starts the proposal, and says so", async () => {
    const workspace = await proposingWorkspace();
    const list = await run(["mcp", "list", "--workspace", workspace, "--json"], (await userConfig({})).env);
    const digest = JSON.parse(list.stdout).servers[0].digest as string;
    const { env } = await userConfig({ mcp_approvals: { proj: digest } });
    const model = await recordingScript({ name: "mcp__proj__ok", arguments: {} });
    const result = await runOk(workspace, env, model.path);
    expect(starts(workspace)).toBe(0);
    expect(result.stderr).toContain("recorded by an earlier harness, bound to no workspace");
    expect(result.stderr).toContain(`harness mcp approve proj --workspace ${workspace}`);
    const listed = await run(["mcp", "list", "--workspace", workspace, "--json"], env);
    expect(JSON.parse(listed.stdout).servers[0].binding.state).toBe("legacy");
  });
});
