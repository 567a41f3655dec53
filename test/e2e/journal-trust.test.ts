import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileJournalStore } from "../../src/journal/file-store.js";
import { loadJournalKey } from "../../src/journal/key-file.js";
import { canonicalJson, digestOf } from "../../src/shared/hash.js";
import { processStartTime } from "../../src/shared/proc-stat.js";
import { cliEnv, runCli } from "../e2e-providers/cli.js";
import { startMockServer } from "../e2e-providers/mock-server.js";
import {
  BIN,
  type CliResult,
  ensureBuilt,
  expectExit,
  finished,
  journalFile,
  jsonScript,
  jsonSummary,
  lockFile,
  ofType,
  readJournal,
  removeTempDirs,
  sessionDir,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * Journals the user did not record are not trusted: a session shipped inside a repository,
 * recorded under someone else's journal key or forged and re-chained, is refused before anything
 * it recorded runs or any request carries the user's key. Everything here goes through the built
 * CLI; each user is a separate HARNESS_KEY_FILE.
 */

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());

const JOURNAL_REFUSED = 5;
const VICTIM_SECRET = "sk-victim-secret-never-sent";

async function userEnv(extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  const home = await tempDir("harness-trust-home-");
  return cliEnv(home, {
    HARNESS_KEY_FILE: join(await tempDir("harness-trust-key-"), "journal.key"),
    ...extra,
  });
}

function refusedAsUntrusted(result: CliResult, sessionId: string): void {
  expectExit(result, JOURNAL_REFUSED);
  expect(result.stderr).toContain("journal refused (UNTRUSTED)");
  expect(result.stderr).toContain(`harness journal adopt ${sessionId}`);
  expect(result.stderr).not.toContain("    at ");
}

describe("a repository that ships a session recorded under another key", () => {
  it("is refused by resume, run --session and verify: its acceptance never runs and its URL never gets the key, until adopted", async () => {
    let phase: "attacker" | "victim" = "attacker";
    const server = await startMockServer({
      dialect: "chat",
      script: () =>
        phase === "attacker"
          ? { kind: "http_error", status: 500, body: '{"error":{"message":"try later"}}' }
          : { kind: "text", text: "done" },
    });
    try {
      const workspace = await workspaceWith({ "README.md": "a cloned repository\n" });
      const session = "shipped";
      const marker = join(workspace, "acceptance-ran");
      const modelFlags = [
        "--provider",
        "openai-compatible",
        "--model",
        "m",
        "--base-url",
        server.baseUrl,
        "--api-key-env",
        "OPENAI_API_KEY",
      ];
      // The attacker records the session with their own key; it stops early, so resuming it
      // would ask their endpoint again (with the resumer's key) and then run the acceptance.
      const attacker = await userEnv();
      const recorded = await runCli(
        [
          "run",
          ...modelFlags,
          "--session",
          session,
          "-w",
          workspace,
          "--write",
          "allow",
          "--accept",
          "touch acceptance-ran",
          "--max-model-requests",
          "1",
          "a goal",
        ],
        attacker,
      );
      expectExit(recorded, 2);
      const requestsByAttacker = server.requests.length;
      expect(requestsByAttacker).toBe(1);
      phase = "victim";

      const victim = await userEnv({ OPENAI_API_KEY: VICTIM_SECRET });
      const shipped = readFileSync(journalFile(workspace, session));
      refusedAsUntrusted(await runCli(["resume", session, "-w", workspace], victim), session);
      refusedAsUntrusted(
        await runCli(["run", ...modelFlags, "--session", session, "-w", workspace, "a goal"], victim),
        session,
      );
      const verified = await runCli(["journal", "verify", session, "-w", workspace], victim);
      expectExit(verified, JOURNAL_REFUSED);
      expect(verified.stdout).toContain("recorded under another journal key");
      expect(existsSync(marker)).toBe(false);
      expect(server.requests).toHaveLength(requestsByAttacker);
      expect(readFileSync(journalFile(workspace, session))).toEqual(shipped);

      // Showing it is fine, labelled.
      const inspected = await runCli(["inspect", session, "-w", workspace], victim);
      expectExit(inspected, 0);
      expect(inspected.stdout).toContain("UNTRUSTED");
      const listed = await runCli(["sessions", "-w", workspace, "--json"], victim);
      expect(JSON.parse(listed.stdout)).toEqual([
        expect.objectContaining({ session, status: "untrusted (stopped (budget_exhausted))" }),
      ]);

      // Adopting asks; with no terminal and no --yes it is refused and changes nothing.
      const unasked = await runCli(["journal", "adopt", session, "-w", workspace], victim);
      expectExit(unasked, JOURNAL_REFUSED);
      expect(unasked.stderr).toContain("\n    touch acceptance-ran\n");
      expect(unasked.stderr).toContain(server.baseUrl);
      expect(unasked.stderr).toMatch(/^ {2}key variable: +OPENAI_API_KEY$/m);
      expect(unasked.stderr).toContain("--yes");
      expect(readFileSync(journalFile(workspace, session))).toEqual(shipped);

      // Adopted on purpose: history is kept byte for byte and one authenticated record vouches for it.
      const adopted = await runCli(["journal", "adopt", session, "-w", workspace, "--yes"], victim);
      expectExit(adopted, 0);
      const after = readFileSync(journalFile(workspace, session));
      expect(after.subarray(0, shipped.length)).toEqual(shipped);
      const records = await readJournal(workspace, session);
      const adoption = records.at(-1)!;
      expect(adoption.type).toBe("journal.adopted");
      expect(adoption.data).toMatchObject({ head_hash: records.at(-2)!.hash, records: records.length - 1 });
      expectExit(await runCli(["journal", "verify", session, "-w", workspace], victim), 0);

      // Only now does resuming do what the journal recorded: the control that shows the refusals above mattered.
      const resumed = await runCli(["resume", session, "-w", workspace, "--json"], victim);
      expectExit(resumed, 0);
      expect(jsonSummary(resumed).status).toBe("verified");
      expect(existsSync(marker)).toBe(true);
      expect(server.requests.length).toBeGreaterThan(requestsByAttacker);
      expect(server.requests.at(-1)!.headers.authorization).toBe(`Bearer ${VICTIM_SECRET}`);

      // The attacker's key no longer vouches for the journal the victim took over.
      refusedAsUntrusted(await runCli(["resume", session, "-w", workspace], attacker), session);
    } finally {
      await server.close();
    }
  });
});

/**
 * Run `harness ARGS` on a pseudo-terminal (util-linux `script`), typing `answer` once the adopt
 * prompt shows (after `meanwhile`, what happens while the person reads it).
 */
function onTerminal(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  answer: string,
  meanwhile: () => Promise<void> = async () => {},
): Promise<CliResult> {
  const command = [process.execPath, BIN, ...args].map((arg) => `'${arg.replace(/'/g, "'\\''")}'`).join(" ");
  const child = spawn("script", ["-qec", command, "/dev/null"], { env, stdio: ["pipe", "pipe", "pipe"] });
  let typed = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (!typed && chunk.toString("utf8").includes("Only y or yes adopts")) {
      typed = true;
      void meanwhile().then(() => child.stdin.write(`${answer}\n`));
    }
  });
  return finished(child);
}

describe("journal adopt on a terminal", () => {
  it("adopts only on y or yes; any other answer changes nothing", async () => {
    const owner = await userEnv();
    const session = "colleague";
    const { workspace } = await ownSession(owner, session);
    const me = await userEnv();
    const before = readFileSync(journalFile(workspace, session));
    const declined = await onTerminal(["journal", "adopt", session, "-w", workspace], me, "sure");
    expectExit(declined, JOURNAL_REFUSED);
    expect(declined.stdout).toContain("not adopted; nothing was changed");
    expect(readFileSync(journalFile(workspace, session))).toEqual(before);
    const accepted = await onTerminal(["journal", "adopt", session, "-w", workspace], me, "yes");
    expectExit(accepted, 0);
    expect(accepted.stdout).toContain(`session ${session}: adopted`);
    expect((await readJournal(workspace, session)).at(-1)!.type).toBe("journal.adopted");
    expectExit(await runCli(["journal", "verify", session, "-w", workspace], me), 0);
  });

  it("adopts nothing when the journal gains a record while the person decides", async () => {
    const owner = await userEnv();
    const session = "moving";
    const { workspace } = await ownSession(owner, session);
    const me = await userEnv();
    // The colleague resumes their session while the prompt shows what it holds.
    const colleague = new FileJournalStore(join(workspace, ".harness"), {
      key: loadJournalKey({ path: String(owner.HARNESS_KEY_FILE) }),
    });
    const meanwhile = async () => {
      const writer = await colleague.openWriter(session, { create: false });
      await writer.append([{ type: "session.resumed", data: { pid: process.pid } }]);
      await writer.close();
    };
    const shown = (await readJournal(workspace, session)).length;
    const result = await onTerminal(["journal", "adopt", session, "-w", workspace], me, "yes", meanwhile);
    expectExit(result, JOURNAL_REFUSED);
    expect(result.stdout).toContain(
      `refused (JOURNAL_CHANGED): session ${session} changed while you were reviewing it (${shown} records shown, ${shown + 1} now)`,
    );
    const records = await readJournal(workspace, session);
    expect(records.map((r) => r.type).slice(shown)).toEqual(["session.resumed"]);
    expectExit(await runCli(["journal", "verify", session, "-w", workspace], me), JOURNAL_REFUSED);
  });
});

/** A verified session of the user's own, recorded with a scripted model. */
async function ownSession(env: NodeJS.ProcessEnv, session: string) {
  const workspace = await workspaceWith({ "hello.txt": "hello\n" });
  const script = await jsonScript([{ text: "nothing to do" }]);
  const accept = "grep -q hello hello.txt";
  const args = ["--script", script, "-w", workspace, "--write", "allow", "--accept", accept];
  const run = await runCli(["run", ...args, "--session", session, "a goal"], env);
  expectExit(run, 0);
  return { workspace, script, args };
}

/** Re-chain the journal after `edit`, as a forger who knows the algorithm but not the key would. */
function rechain(path: string, edit: (record: Record<string, unknown>) => void): void {
  const lines = readFileSync(path, "utf8").split("\n").slice(0, -1);
  let prev = "0".repeat(64);
  const forged = lines.map((line) => {
    const { hash: _hash, mac, ...body } = JSON.parse(line) as Record<string, unknown>;
    edit(body);
    body.prev = prev;
    const hash = digestOf(body);
    prev = hash;
    return canonicalJson({ ...body, hash, mac });
  });
  writeFileSync(path, forged.map((line) => `${line}\n`).join(""));
}

describe("a journal modified and re-chained without the key", () => {
  it("is refused by resume, verify, apply and review; inspect shows it labelled untrusted", async () => {
    const env = await userEnv();
    const session = "forged";
    const { workspace, args } = await ownSession(env, session);
    rechain(journalFile(workspace, session), (record) => {
      if (record.type !== "session.started") return;
      const data = record.data as Record<string, unknown>;
      data.acceptance = ["touch forged-ran"];
    });
    const forged = readFileSync(journalFile(workspace, session));

    refusedAsUntrusted(await runCli(["resume", session, ...args.slice(0, 2), "-w", workspace], env), session);
    const verified = await runCli(["journal", "verify", session, "-w", workspace, "--json"], env);
    expectExit(verified, JOURNAL_REFUSED);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: false, trusted: false, problem: "FORGED" });
    refusedAsUntrusted(await runCli(["apply", session, "-w", workspace], env), session);
    refusedAsUntrusted(await runCli(["review", session, "-w", workspace], env), session);
    expect(existsSync(join(workspace, "forged-ran"))).toBe(false);
    expect(readFileSync(journalFile(workspace, session))).toEqual(forged);

    const inspected = await runCli(["inspect", session, "-w", workspace, "--json"], env);
    expectExit(inspected, 0);
    expect(JSON.parse(inspected.stdout)).toMatchObject({
      trusted: false,
      untrusted: expect.stringContaining("record seq 0"),
    });
  });

  it("the user's own session still verifies and re-runs with no new model request", async () => {
    const env = await userEnv();
    const { workspace, args } = await ownSession(env, "mine");
    expectExit(await runCli(["journal", "verify", "mine", "-w", workspace], env), 0);
    const again = await runCli(["resume", "mine", ...args.slice(0, 2), "-w", workspace, "--json"], env);
    expectExit(again, 0);
    expect(jsonSummary(again)).toMatchObject({ status: "verified", model_requests: 1 });
  });
});

describe("artifacts are checked against their SHA-256", () => {
  it("a modified artifact is reported by verify, and read_artifact returns an error instead of its bytes", async () => {
    const env = await userEnv();
    const workspace = await workspaceWith({ "hello.txt": "hello\n" });
    const events = journalFile(workspace, "art");
    const artifactsDir = join(sessionDir(workspace, "art"), "artifacts");
    // Step 0 runs a command whose output is stored whole as an artifact; step 1, standing in for
    // an attacker with write access to the session folder, rewrites that artifact, then asks for it.
    const script = join(await tempDir("harness-trust-script-"), "script.mjs");
    await writeFile(
      script,
      `import { readFileSync, writeFileSync } from "node:fs";
export default (messages, step) => {
  if (step === 0) return { text: "", calls: [{ id: "sh", name: "shell", arguments: { command: "seq 1 30000" } }] };
  if (step === 1) {
    const result = readFileSync(${JSON.stringify(events)}, "utf8").trim().split("\\n").map((line) => JSON.parse(line))
      .find((record) => record.type === "tool.result" && record.data.call_id === "sh");
    const id = result.data.data.stdout.artifact.id;
    writeFileSync(${JSON.stringify(artifactsDir)} + "/" + id, "FORGED BYTES");
    return { text: "", calls: [{ id: "art", name: "read_artifact", arguments: { id } }] };
  }
  return { text: "done" };
};
`,
    );
    const run = await runCli(
      ["run", "--script", script, "-w", workspace, "--shell", "allow", "--session", "art", "read it"],
      env,
    );
    expectExit(run, 0);
    const records = await readJournal(workspace, "art");
    const shellResult = ofType(records, "tool.result").find((r) => r.data.call_id === "sh")!;
    const id = (shellResult.data.data as { stdout: { artifact: { id: string } } }).stdout.artifact.id;
    const result = ofType(records, "tool.result").find((r) => r.data.call_id === "art")!;
    expect(result.data).toMatchObject({ status: "error", error_type: "ARTIFACT_CORRUPT" });
    expect(JSON.stringify(result.data)).not.toContain("FORGED BYTES");

    const verified = await runCli(["journal", "verify", "art", "-w", workspace], env);
    expectExit(verified, JOURNAL_REFUSED);
    expect(verified.stdout).toContain(`artifact ${id} was modified`);
  });
});

describe("writer locks on resume", () => {
  async function stoppedSession(env: NodeJS.ProcessEnv) {
    const workspace = await workspaceWith({ "hello.txt": "hello\n" });
    const script = await jsonScript([{ text: "nothing to do" }]);
    expectExit(
      await runCli(["run", "--script", script, "-w", workspace, "--session", "s", "a goal"], env),
      0,
    );
    return { workspace, script };
  }

  function writeLock(workspace: string, owner: Record<string, unknown>): string {
    const text = `${JSON.stringify(owner)}\n`;
    writeFileSync(lockFile(workspace, "s"), text);
    return text;
  }

  it("takes over a lock whose owner is dead, with a printed line and a lock.recovered record", async () => {
    const env = await userEnv();
    const { workspace, script } = await stoppedSession(env);
    const dead = spawnSync("true").pid!;
    writeLock(workspace, {
      pid: dead,
      host: hostname(),
      started_at: "2026-01-01T00:00:00.000Z",
      proc_start: null,
    });
    const resumed = await runCli(["resume", "s", "--script", script, "-w", workspace], env);
    expectExit(resumed, 0);
    expect(resumed.stderr).toContain(`took over the stale writer lock of pid ${dead}`);
    const recovered = ofType(await readJournal(workspace, "s"), "lock.recovered");
    expect(recovered.map((r) => r.data)).toEqual([
      {
        pid: dead,
        host: hostname(),
        started_at: "2026-01-01T00:00:00.000Z",
        proc_start: null,
        reason: `no process ${dead} exists`,
      },
    ]);
    expect(existsSync(lockFile(workspace, "s"))).toBe(false);
  });

  it("never displaces a live owner, nor one on another host: refused with the journal exit code", async () => {
    const env = await userEnv();
    const { workspace, script } = await stoppedSession(env);
    const before = readFileSync(journalFile(workspace, "s"));
    const live = writeLock(workspace, {
      pid: process.pid,
      host: hostname(),
      started_at: "2026-01-01T00:00:00.000Z",
      proc_start: processStartTime(process.pid),
    });
    const refused = await runCli(["resume", "s", "--script", script, "-w", workspace], env);
    expectExit(refused, JOURNAL_REFUSED);
    expect(refused.stderr).toContain("journal refused (LOCKED)");
    expect(refused.stderr).toContain(`pid ${process.pid}`);
    expect(readFileSync(lockFile(workspace, "s"), "utf8")).toBe(live);

    const remote = writeLock(workspace, { pid: 1, host: "another-host", started_at: "x", proc_start: null });
    const elsewhere = await runCli(["resume", "s", "--script", script, "-w", workspace], env);
    expectExit(elsewhere, JOURNAL_REFUSED);
    expect(elsewhere.stderr).toContain("another host");
    expect(elsewhere.stderr).toContain("harness unlock s --force");
    expect(readFileSync(lockFile(workspace, "s"), "utf8")).toBe(remote);
    expect(readFileSync(journalFile(workspace, "s"))).toEqual(before);
  });
});

describe("the journal key file", () => {
  it("is created with mode 0600; a key others can read, or one inside the workspace, is refused", async () => {
    const env = await userEnv();
    const keyFile = env.HARNESS_KEY_FILE!;
    const workspace = await workspaceWith({ "hello.txt": "hello\n" });
    const script = await jsonScript([{ text: "nothing to do" }]);
    const run = (extra: NodeJS.ProcessEnv = {}) =>
      runCli(["run", "--script", script, "-w", workspace, "a goal"], { ...env, ...extra });
    expectExit(await run(), 0);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);

    chmodSync(keyFile, 0o644);
    const readable = await run();
    expectExit(readable, JOURNAL_REFUSED);
    expect(readable.stderr).toContain("journal refused (KEY)");
    expect(readable.stderr).toContain(`chmod 600 ${keyFile}`);

    const inside = await run({ HARNESS_KEY_FILE: join(workspace, "journal.key") });
    expectExit(inside, JOURNAL_REFUSED);
    expect(inside.stderr).toContain("lies inside the workspace");
    expect(existsSync(join(workspace, "journal.key"))).toBe(false);
  });
});
