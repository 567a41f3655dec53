import { existsSync, readdirSync } from "node:fs";
import { readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  type JournalLine,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { StdioServer, serverConfig, serverEnv } from "./serve-support.js";

/*
 * The model (parent and children) as the attacker: each test drives the built CLI with a script
 * whose calls try to make a child do more than its parent may, reach past its copy, or leave the
 * parent's record wrong, and asserts the attempt fails, from the journals and the bytes on disk.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

interface Script {
  replies: unknown[];
  agents?: Record<string, Script>;
}

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

async function run(
  workspace: string,
  script: Script | ((copies: string) => Script),
  flags: string[],
): Promise<{
  id: string;
  result: CliResult;
  journal: JournalLine[];
  child: (label: string) => Promise<JournalLine[]>;
  copies: string;
}> {
  const copies = await tempDir("harness-agent-copies-");
  const file = join(await tempDir("harness-agents-script-"), "script.json");
  await writeFile(file, JSON.stringify(typeof script === "function" ? script(copies) : script));
  const id = `s${Math.random().toString(16).slice(2, 10)}`;
  const result = await finished(
    startHarness(
      ["run", "--script", file, "--workspace", workspace, "--session", id, "--json", ...flags, "delegate"],
      { env: { ...childEnv(), HARNESS_AGENTS_DIR: copies } },
    ),
  );
  return {
    id,
    result,
    journal: await readJournal(workspace, id),
    child: (label) => readJournal(workspace, `${id}/${label}`),
    copies,
  };
}

const done = { replies: [{ text: "done" }] };

describe("a child's acceptance commands", () => {
  it("are not run when the parent's shell policy would not run them (a deny rule): the child stays unverified and unmerged", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", ".env": "SECRET=1\n" });
    const { result, journal, child } = await run(
      workspace,
      {
        replies: [
          {
            text: "",
            calls: [
              call("a1", "agent", {
                task: "nothing",
                label: "sneaky",
                merge: "apply",
                accept: ["touch pwned.txt", "test -f a.txt"],
              }),
              call("a2", "agent", { task: "nothing", label: "honest", accept: ["test -f a.txt"] }),
            ],
          },
          { text: "ok" },
        ],
        agents: { sneaky: done, honest: done },
      },
      ["--write", "allow", "--shell", "allow", "--deny", "shell(touch*)"],
    );
    expectExit(result, 0);
    // The parent's own shell may not run it, so no child runs it as a check: nothing ran,
    // nothing came back, nothing was merged.
    const sneaky = await child("sneaky");
    expect(ofType(sneaky, "acceptance.checked")).toEqual([]);
    expect(ofType(sneaky, "session.started")[0]?.data.acceptance ?? []).toEqual([]);
    const finishedBy = new Map(ofType(journal, "agent.finished").map((r) => [r.data.call_id, r.data]));
    expect(finishedBy.get("a1")).toMatchObject({ outcome: "unverified", changes: [] });
    expect(ofType(journal, "agent.merge")).toEqual([]);
    expect(existsSync(join(workspace, "pwned.txt"))).toBe(false);
    const said = String(resultsByCall(journal).get("a1")?.content);
    expect(said).toContain('not granted: acceptance command "touch pwned.txt"');
    expect(said).toContain("the child cannot be verified");
    // A check the parent's shell may run still runs and verifies.
    expect(finishedBy.get("a2")?.outcome).toBe("verified");
    expect(ofType(await child("honest"), "acceptance.checked")[0]?.data.accepted).toBe(true);
  });

  it("are not run under a parent with --shell deny, whose checks could otherwise read what its rules deny", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", ".env": "SECRET=1\n" });
    const { result, journal, child } = await run(
      workspace,
      {
        replies: [
          {
            text: "",
            calls: [
              call("a1", "agent", {
                task: "nothing",
                label: "reader",
                isolation: "shared",
                accept: ["cat .env; echo leaked >> a.txt"],
              }),
            ],
          },
          { text: "ok" },
        ],
        agents: { reader: done },
      },
      ["--shell", "deny", "--deny", "read_file(.env)"],
    );
    expectExit(result, 0);
    const reader = await child("reader");
    expect(ofType(reader, "acceptance.checked")).toEqual([]);
    expect(JSON.stringify(reader)).not.toContain("SECRET=1");
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("a\n");
    expect(String(resultsByCall(journal).get("a1")?.content)).toContain("not granted: acceptance command");
  });
});

describe("an agent call's arguments", () => {
  it("refuse the label of the session folder's own artifacts folder and a wall_ms no timer can hold, before any copy or record", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { result, journal, copies } = await run(
      workspace,
      {
        replies: [
          {
            text: "",
            calls: [
              call("a1", "agent", { task: "x", label: "artifacts" }),
              call("a2", "agent", { task: "x", label: "Artifacts" }),
              call("a3", "agent", { task: "x", label: "slow", budget: { wall_ms: 3_000_000_000 } }),
            ],
          },
          { text: "ok" },
        ],
        agents: { slow: done },
      },
      ["--write", "allow"],
    );
    expectExit(result, 0);
    const results = resultsByCall(journal);
    for (const id of ["a1", "a2", "a3"]) {
      expect(results.get(id)?.status).toBe("invalid");
      expect(results.get(id)?.error_type).toBe("INVALID_ARGUMENTS");
    }
    expect(ofType(journal, "agent.started")).toEqual([]);
    expect(readdirSync(copies)).toEqual([]);
  });
});

describe("a child's merge", () => {
  it("journals each directory it made once, and undo takes them back", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { id, result, journal } = await run(
      workspace,
      {
        replies: [
          { text: "", calls: [call("a1", "agent", { task: "x", label: "w", merge: "apply" })] },
          { text: "ok" },
        ],
        agents: {
          w: {
            replies: [
              { text: "", calls: [call("c1", "shell", { command: "mkdir -p d/e && echo x > d/e/f.txt" })] },
              { text: "done" },
            ],
          },
        },
      },
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    expect(await readFile(join(workspace, "d/e/f.txt"), "utf8")).toBe("x\n");
    const changed = ofType(journal, "workspace.changed").filter((r) => r.data.call_id === "a1");
    const created = changed.flatMap((r) => (r.data.created as { path: string }[]).map((c) => c.path));
    expect(created).toEqual(["d", "d/e", "d/e/f.txt"]);
    const undo = await harness(["undo", id, "--to", "a1", "--workspace", workspace, "--json"]);
    expectExit(undo, 0);
    expect(existsSync(join(workspace, "d"))).toBe(false);
  });
});

describe("a child reaching past its copy", () => {
  it("cannot write the parent's workspace by its absolute path, nor its copy's base, nor merge a link or .git", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    await symlink("../base.json", join(workspace, "up"));
    const { result, journal, child, copies } = await run(
      workspace,
      () => ({
        replies: [
          { text: "", calls: [call("a1", "agent", { task: "x", label: "w", merge: "apply" })] },
          { text: "ok" },
        ],
        agents: {
          w: {
            replies: [
              {
                text: "",
                calls: [
                  call("c1", "shell", {
                    command: `echo PWN >> ${workspace}/a.txt; echo '{}' > ../base.json; echo '{}' > up; true`,
                  }),
                  call("c2", "read_file", { path: "up" }),
                  call("c3", "write_file", { path: "../escape.txt", content: "x" }),
                  call("c4", "shell", {
                    command:
                      "ln -s / root-link; mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit; true",
                  }),
                ],
              },
              { text: "done" },
            ],
          },
        },
      }),
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("a\n");
    const records = await child("w");
    const results = resultsByCall(records);
    expect(results.get("c2")?.error_type).toBe("PATH_ESCAPE");
    expect(results.get("c3")?.error_type).toBe("PATH_ESCAPE");
    // The copy's base (kept beside the copy, outside the child's sandbox) was not the child's to
    // change: its changes were measured against the real base (an emptied base would list every
    // file as created), and the copy is gone once the child's end is journaled.
    const [first] = ofType(journal, "agent.finished");
    expect(((first?.data.changes ?? []) as { path: string }[]).map((c) => c.path)).not.toContain("a.txt");
    expect(readdirSync(copies)).toEqual([]);
    // Neither the link nor .git came back; the link is a conflict the parent is told of.
    expect(existsSync(join(workspace, "root-link"))).toBe(false);
    expect(existsSync(join(workspace, ".git"))).toBe(false);
    const [end] = ofType(journal, "agent.finished");
    expect(end?.data.conflicts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "root-link", reason: "symbolic links are not merged" }),
      ]),
    );
  });

  it("is no looser than its parent: each call the parent makes under deny read_file(.env) ends the same way in the child", async () => {
    const workspace = await workspaceWith({ ".env": "SECRET=1\n", "a.txt": "a\n" });
    const probes = (prefix: string) => [
      call(`${prefix}1`, "read_file", { path: ".env" }),
      call(`${prefix}2`, "read_file", { path: "./.env" }),
      call(`${prefix}3`, "grep", { pattern: "SECRET", path: "." }),
      call(`${prefix}4`, "glob", { pattern: "**/.env" }),
      call(`${prefix}5`, "shell", { command: "cat ./.env" }),
      call(`${prefix}6`, "shell", { command: "cat .env" }),
      // A line naming no secret runs, so the run is not stopped for having every change denied.
      call(`${prefix}7`, "shell", { command: "cat a.txt" }),
    ];
    const { result, journal, child } = await run(
      workspace,
      {
        replies: [
          { text: "", calls: probes("p") },
          {
            text: "",
            calls: [call("a1", "agent", { task: "read", label: "r", shell: "allow", write: "allow" })],
          },
          { text: "ok" },
        ],
        agents: { r: { replies: [{ text: "", calls: probes("c") }, { text: "done" }] } },
      },
      ["--write", "allow", "--shell", "allow", "--deny", "read_file(.env)"],
    );
    expectExit(result, 0);
    const parent = resultsByCall(journal);
    const children = resultsByCall(await child("r"));
    const ending = (r: Record<string, unknown> | undefined) => [r?.status, r?.error_type ?? null];
    for (const n of [1, 2, 3, 4, 5, 6, 7])
      expect(ending(children.get(`c${n}`))).toEqual(ending(parent.get(`p${n}`)));
    // Naming .env in a shell line asks like read_file(.env) would (denied: no terminal).
    expect(parent.get("p6")?.status).toBe("denied");
    expect(parent.get("p7")?.status).toBe("ok");
    expect(parent.get("p1")?.error_type).toBe("POLICY_DENIED");
    expect(String(children.get("c3")?.content)).not.toContain("SECRET=1");
  });

  it("given edit_paths alone, runs scoped to them: its shell is refused and a file past them is not written", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", "b.txt": "b\n" });
    const { result, journal, child } = await run(
      workspace,
      {
        replies: [
          {
            text: "",
            calls: [call("a1", "agent", { task: "x", label: "w", merge: "apply", edit_paths: ["a.txt"] })],
          },
          { text: "ok" },
        ],
        agents: {
          w: {
            replies: [
              {
                text: "",
                calls: [
                  call("c1", "shell", { command: "echo CHILD >> b.txt" }),
                  call("c2", "write_file", { path: "c.txt", content: "c" }),
                  call("c3", "read_file", { path: "a.txt" }),
                ],
              },
              { text: "done" },
            ],
          },
        },
      },
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    const results = resultsByCall(await child("w"));
    expect(results.get("c1")?.error_type).toBe("POLICY_DENIED");
    expect(results.get("c2")?.error_type).toBe("POLICY_DENIED");
    expect(results.get("c3")?.status).toBe("ok");
    expect(ofType(journal, "agent.finished")[0]?.data).toMatchObject({ outcome: "unverified", changes: [] });
    expect(await readFile(join(workspace, "b.txt"), "utf8")).toBe("b\n");
    expect(existsSync(join(workspace, "c.txt"))).toBe(false);
  });

  it("shared, writes nothing of the parent's whatever it asks: its shell is read-only and its file tools are denied", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { result, journal, child } = await run(
      workspace,
      {
        replies: [
          {
            text: "",
            calls: [
              call("a1", "agent", {
                task: "x",
                label: "sh",
                isolation: "shared",
                write: "allow",
                merge: "apply",
              }),
            ],
          },
          { text: "ok" },
        ],
        agents: {
          sh: {
            replies: [
              {
                text: "",
                calls: [
                  call("c1", "shell", { command: "echo SH >> a.txt; touch new.txt; true" }),
                  call("c2", "write_file", { path: "b.txt", content: "b" }),
                ],
              },
              { text: "done" },
            ],
          },
        },
      },
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    const results = resultsByCall(await child("sh"));
    expect(String(results.get("c1")?.content)).toContain("Read-only file system");
    expect(results.get("c2")?.error_type).toBe("POLICY_DENIED");
    expect(ofType(journal, "agent.finished")[0]?.data.changes).toEqual([]);
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("a\n");
    expect(existsSync(join(workspace, "new.txt"))).toBe(false);
    expect(existsSync(join(workspace, "b.txt"))).toBe(false);
  });
});

describe("a child's ask over harness serve", () => {
  it("is shown as the child's own call, never as an earlier call of the parent's with the same id", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const file = join(await tempDir("harness-agents-script-"), "script.json");
    await writeFile(
      file,
      JSON.stringify({
        replies: [
          { text: "", calls: [call("c1", "shell", { command: "echo harmless" })] },
          { text: "", calls: [call("a1", "agent", { task: "x", label: "kid" })] },
          { text: "ok" },
        ],
        agents: {
          kid: {
            replies: [
              { text: "", calls: [call("c1", "shell", { command: "echo DANGER > a.txt" })] },
              { text: "done" },
            ],
          },
        },
      }),
    );
    const server = new StdioServer(
      serverEnv(await serverConfig(), { HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") }),
    );
    try {
      const started = await server.call("session/start", { workspace, goal: "g", options: { script: file } });
      const session = started.result?.session as string;
      const first = await server.waitFor((m) => m.json.method === "approval/requested");
      await server.call("approval/respond", {
        approval_id: first.json.params?.approval_id,
        decision: "accept",
      });
      // The child's ask is journaled in the child's journal: the client finds it in approval/list.
      let pending: Record<string, unknown>[] = [];
      for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
        const listed = await server.call("approval/list", {});
        pending = (listed.result?.approvals as Record<string, unknown>[] | undefined) ?? [];
        if (pending.length === 1 && pending[0]?.approval_id !== first.json.params?.approval_id) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(pending[0]).toMatchObject({
        call_id: "kid/c1",
        tool: "shell",
        arguments: { command: "echo DANGER > a.txt" },
      });
      await server.call("approval/respond", { approval_id: pending[0]?.approval_id, decision: "decline" });
      await server.waitFor((m) => m.json.method === "turn/completed");
      const journal = await readJournal(workspace, session);
      expect(ofType(journal, "agent.approval").map((r) => r.data)).toEqual([
        expect.objectContaining({ label: "kid", call_id: "c1", tool: "shell", decision: "deny" }),
      ]);
    } finally {
      await server.close();
    }
  });
});
