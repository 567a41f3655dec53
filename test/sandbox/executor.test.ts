import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FileArtifactStore } from "../../src/artifacts/file-store.js";
import { CommandCheck } from "../../src/engine/acceptance.js";
import { commandHook } from "../../src/policy/command-hook.js";
import { HookRunner } from "../../src/policy/hooks.js";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { Executor, type SpawnReport } from "../../src/sandbox/executor.js";
import { NoSandbox } from "../../src/sandbox/none.js";
import { MIN_SECRET_LENGTH, secretFilter, secretsOf } from "../../src/sandbox/scrub.js";
import { dirsPerTest } from "../shell/helpers.js";

const dirs = dirsPerTest("executor");
const KEY = "sk-live-0123456789abcdef";
const environment = { PATH: process.env.PATH, HOME: "/nonexistent", OPENAI_API_KEY: KEY, LANG: "C" };

describe("secret scrubbing", () => {
  it("replaces a secret split across any chunk boundary, and keeps every other byte", () => {
    const secrets = secretsOf({
      OPENAI_API_KEY: KEY,
      GITHUB_TOKEN: "ghp_abcdefgh12345678",
      PATH: "/usr/bin",
    });
    expect(secrets.map((s) => s.name).sort()).toEqual(["GITHUB_TOKEN", "OPENAI_API_KEY"]);
    const text = `before ${KEY} middle ghp_abcdefgh12345678 after ${KEY}`;
    const expected =
      "before [redacted:OPENAI_API_KEY] middle [redacted:GITHUB_TOKEN] after [redacted:OPENAI_API_KEY]";
    const bytes = Buffer.from(text);
    for (let size = 1; size <= bytes.length; size++) {
      const filter = secretFilter(secrets);
      const out: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += size) out.push(filter.write(bytes.subarray(at, at + size)));
      out.push(filter.end());
      expect(Buffer.concat(out).toString()).toBe(expected);
    }
  });

  it("holds back only an end that could start a secret: other output passes at once", () => {
    const filter = secretFilter(secretsOf({ OPENAI_API_KEY: KEY }));
    expect(filter.write(Buffer.from("line one\n")).toString()).toBe("line one\n");
    expect(filter.write(Buffer.from("key sk-li")).toString()).toBe("key ");
    expect(filter.write(Buffer.from("ve-0123456789abcdef done")).toString()).toBe(
      "[redacted:OPENAI_API_KEY] done",
    );
    expect(filter.write(Buffer.from(" sk-other")).toString()).toBe(" sk-other");
    expect(filter.end().toString()).toBe("");
  });

  it("treats short values and harmless names as no secret, and names the provider key variable explicitly", () => {
    const secrets = secretsOf(
      {
        SHORT_TOKEN: "a".repeat(MIN_SECRET_LENGTH - 1),
        EDITOR: "vim-but-long",
        MY_LLM: "llm-key-value-1234",
      },
      ["MY_LLM"],
    );
    expect(secrets.map((s) => s.name)).toEqual(["MY_LLM"]);
  });
});

describe("the executor", () => {
  it("filters the environment, reports the facts it ran under, and scrubs output into the artifact", async () => {
    const executor = new Executor({ environment });
    const artifacts = new FileArtifactStore(path.join(dirs.scratch, "artifacts"));
    const reports: SpawnReport[] = [];
    const result = await executor.execute({
      purpose: "shell",
      argv: ["/bin/sh", "-c", `printf '%s|' "\${OPENAI_API_KEY:-absent}"; printf '%s' '${KEY}'`],
      workspace: dirs.workspace,
      profile: { sandbox: new NoSandbox(), env: {} },
      timeoutMs: 10_000,
      artifacts,
      onSpawn: (report) => {
        reports.push(report);
      },
    });
    expect(result.stdout.head).toBe("absent|[redacted:OPENAI_API_KEY]");
    const stored = await artifacts.read(result.stdout.artifact!.id);
    expect(Buffer.from(stored!).toString()).toBe("absent|[redacted:OPENAI_API_KEY]");
    expect(result.facts).toEqual({
      purpose: "shell",
      sandbox_profile: "none",
      env_names: ["HOME", "LANG", "PATH"],
    });
    expect(reports).toEqual([expect.objectContaining({ ...result.facts, sandboxed: false })]);
  });

  it("passes a credential only when the profile names it, and still scrubs its value", async () => {
    const executor = new Executor({ environment });
    const result = await executor.execute({
      purpose: "acceptance",
      argv: ["/bin/sh", "-c", `test "$OPENAI_API_KEY" = '${KEY}' && echo "got $OPENAI_API_KEY"`],
      workspace: dirs.workspace,
      profile: { sandbox: new NoSandbox(), env: { pass: ["OPENAI_API_KEY"] } },
      timeoutMs: 10_000,
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout.head).toBe("got [redacted:OPENAI_API_KEY]\n");
    expect(result.facts.env_names).toContain("OPENAI_API_KEY");
  });
});

describe("acceptance checks and hooks through the executor", () => {
  it("an acceptance check records its profile and the names of the variables, never their values", async () => {
    const executor = new Executor({ environment });
    const check = new CommandCheck(`echo start; cat key.txt; echo oops >&2; exit 3`, {
      workspace: dirs.workspace,
      executor,
      profile: { sandbox: new BwrapSandbox("workspace-write"), env: {} },
    });
    await writeFile(path.join(dirs.workspace, "key.txt"), `${KEY}\n`);
    const outcome = await check.run(new AbortController().signal);
    expect(outcome).toMatchObject({
      passed: false,
      exit_code: 3,
      purpose: "acceptance",
      sandbox_profile: "workspace-write",
      output: "start\n[redacted:OPENAI_API_KEY]\noops\n",
    });
    expect(outcome.env_names).not.toContain("OPENAI_API_KEY");
  });

  it("a command hook in the read-only profile cannot write the workspace, and says what it ran under", async () => {
    const spawns: unknown[] = [];
    const hook = commandHook({
      kind: "admit",
      point: "before_execute",
      command: `echo x > written.txt; echo '{"decision":"allow"}'`,
      name: "guard",
      cwd: dirs.workspace,
      executor: new Executor({ environment }),
      profile: { sandbox: new BwrapSandbox("read-only"), env: {} },
      onSpawn: (report) => {
        spawns.push(report);
      },
    });
    const outcome = await new HookRunner([hook]).admit("before_execute", {
      session: "s",
      callId: "c1",
      tool: "edit_file",
      arguments: {},
      effect: "local_write",
    });
    expect(outcome.allowed).toBe(true);
    await expect(readFile(path.join(dirs.workspace, "written.txt"))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(spawns).toEqual([
      expect.objectContaining({
        callId: "c1",
        purpose: "hook",
        sandbox_profile: "read-only",
        sandboxed: true,
      }),
    ]);
  });
});
