import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * `--context-window` end to end: a scripted model that keeps reading a big file is stopped
 * before a request over the window is sent (its own log shows what it received), the stop is
 * journaled, `inspect --json` shows the tokens of every request and the peak, a resume keeps the
 * recorded window unless given another, and bad values are usage errors.
 */

const BIG = `${"the quick brown fox jumps over the lazy dog ".repeat(200)}\n`;

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A script that reads big.txt at every step (up to 8 times) and appends each step it is asked for to LOG. */
async function readerScript(): Promise<{ script: string; log: string }> {
  const dir = await tempDir("harness-script-");
  const log = join(dir, "requests.log");
  const script = join(dir, "reader.mjs");
  await writeFile(
    script,
    `import { appendFileSync } from "node:fs";
export default function (messages, step) {
  // A compaction request (no tools, the marker last): a summary as long as what it replaces.
  if (String(messages[messages.length - 1].content).startsWith("[harness: context compaction]"))
    return { text: "summary ".repeat(2000) };
  appendFileSync(${JSON.stringify(log)}, step + "\\n");
  if (step < 8) return { calls: [{ id: "read-" + step, name: "read_file", arguments: { path: "big.txt" } }] };
  return { text: "read enough" };
}
`,
  );
  await writeFile(log, "");
  return { script, log };
}

async function received(log: string): Promise<number[]> {
  return (await readFile(log, "utf8")).split("\n").filter(Boolean).map(Number);
}

describe("--context-window", () => {
  it("never sends a request over the window; inspect --json shows tokens per request; resume keeps or replaces the window", async () => {
    const workspace = await workspaceWith({ "big.txt": BIG });
    const { script, log } = await readerScript();
    // The window below is sized for the read tools' specs alone: the other tools' specs (the agent,
    // the shell and its process tools, web_fetch) would take a share that grows as tools are added.
    const common = [
      "--script",
      script,
      "--workspace",
      workspace,
      "--json",
      "--tools",
      "readonly",
      "--agents-depth",
      "0",
    ];
    const stopped = await harness([
      "run",
      ...common,
      "--session",
      "cw",
      "--context-window",
      "8000",
      "read big.txt",
    ]);
    expectExit(stopped, 2);
    const summary = jsonSummary(stopped);
    expect(summary).toMatchObject({ status: "stopped", reason: "context_exhausted" });
    expect(String(summary.message)).toContain(
      "over the 8000-token context window minus 2000 reserved for the reply",
    );

    const records = await readJournal(workspace, "cw");
    // Requests asking for a summary are journaled too (purpose "compaction"); the script does not log them.
    const started = ofType(records, "model.started")
      .map((r) => r.data)
      .filter((r) => r.purpose === undefined);
    const sent = await received(log);
    // At least one read fitted; the model received exactly the requests journaled as started.
    expect(started.length).toBeGreaterThan(1);
    expect(sent).toEqual(started.map((_, step) => step));
    for (const request of started) {
      expect(request).toMatchObject({ context_window: 8000, reply_reserve: 2000 });
      expect(request.estimated_input_tokens as number).toBeLessThanOrEqual(6000);
    }
    const refused = Number(/about (\d+) tokens/.exec(String(summary.message))?.[1]);
    expect(refused).toBeGreaterThan(6000);
    expect(records.at(-1)).toMatchObject({ type: "run.stopped", data: { reason: "context_exhausted" } });
    const estimates = started.map((r) => r.estimated_input_tokens as number);
    // The peak counts every request sent, the summary request included.
    const peak = Math.max(
      ...ofType(records, "model.started").map((r) => r.data.estimated_input_tokens as number),
    );
    expect(peak).toBeGreaterThanOrEqual(Math.max(...estimates));
    expect(summary.tokens).toEqual({
      context_window: 8000,
      peak_estimated_input_tokens: peak,
      peak_reported_input_tokens: 0,
    });

    const inspected = await harness(["inspect", "cw", "--workspace", workspace, "--json"]);
    expectExit(inspected, 0);
    const { tokens } = JSON.parse(inspected.stdout) as {
      tokens: { requests: Record<string, unknown>[]; peak: Record<string, unknown> };
    };
    expect(tokens.requests.filter((r) => r.purpose === undefined)).toEqual(
      estimates.map((estimate, step) => ({
        step,
        attempt: 0,
        estimated_input_tokens: estimate,
        reported_input_tokens: 0,
        cached_input_tokens: null,
        cache_write_tokens: null,
        context_window: 8000,
      })),
    );
    expect(tokens.peak).toEqual({ estimated_input_tokens: peak, reported_input_tokens: 0 });
    const human = await harness(["inspect", "cw", "--workspace", workspace]);
    expect(human.stdout).toContain(`model request: step 1, attempt 1, ~${estimates[0]} tokens of 8000`);
    expect(human.stdout).toContain(`input tokens per request: estimated ${peak}, reported 0`);

    // Resumed without the flag: the recorded window holds, and the same request is refused again.
    const progress = await harness(["resume", "cw", "--script", script, "--workspace", workspace]);
    expectExit(progress, 2);
    expect(progress.stdout).toContain("context_exhausted");
    const again = await harness(["resume", "cw", ...common]);
    expectExit(again, 2);
    expect(jsonSummary(again)).toMatchObject({ reason: "context_exhausted", message: summary.message });
    expect(await received(log)).toEqual(sent);

    // Resumed with a larger window: the flag wins and the session runs to its end.
    const wider = await harness(["resume", "cw", ...common, "--context-window", "100000"]);
    expectExit(wider, 0);
    expect(jsonSummary(wider)).toMatchObject({ status: "unverified", tokens: { context_window: 100000 } });
    expect(wider.stderr).toMatch(/· model request \(step \d+, attempt 1, ~\d+ of 100000 tokens\)/);
    expect(await received(log)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it.each(["0", "-5", "1.5", "abc", "20000000", "1e4", ""])(
    "--context-window=%s is a usage error",
    async (value) => {
      const workspace = await workspaceWith({});
      const { script, log } = await readerScript();
      const result = await harness([
        "run",
        ...["--script", script, "--workspace", workspace, `--context-window=${value}`, "go"],
      ]);
      expectExit(result, 64);
      expect(result.stderr).toContain(
        `--context-window must be a whole number of tokens from 1 to 10000000, got "${value}"`,
      );
      expect(await received(log)).toEqual([]);
    },
  );

  it("the flag beats the profile's context_window, which beats the table (no request is sent)", async () => {
    const configDir = await tempDir("harness-user-config-");
    const config = join(configDir, "config.json");
    const base = { provider: "openai-compatible", base_url: "http://127.0.0.1:9/v1", model: "gpt-4o" };
    await writeFile(
      config,
      JSON.stringify({
        models: {
          sized: { ...base, context_window: 300 },
          // The table's 128000 for gpt-4o, nearly all of it reserved: the first request cannot fit.
          table: { ...base, reply_reserve: 127_990 },
          unknown: { ...base, model: "my-finetune", reply_reserve: 32_760 },
        },
      }),
    );
    const env = { ...childEnv(), HARNESS_CONFIG: config };
    const runWith = async (flags: string[]) => {
      const workspace = await workspaceWith({});
      const result = await finished(
        startHarness(["run", "--workspace", workspace, "--json", ...flags, "go"], { env }),
      );
      expectExit(result, 2);
      const summary = jsonSummary(result);
      expect(summary).toMatchObject({ reason: "context_exhausted", model_requests: 0 });
      return { window: (summary.tokens as { context_window: number }).context_window, stderr: result.stderr };
    };
    expect((await runWith(["--profile", "sized"])).window).toBe(300);
    expect((await runWith(["--profile", "sized", "--context-window", "200"])).window).toBe(200);
    expect((await runWith(["--profile", "table"])).window).toBe(128_000);
    // A model the table does not know: the conservative default, and the user is told.
    const unknown = await runWith(["--profile", "unknown"]);
    expect(unknown.window).toBe(32_768);
    expect(unknown.stderr).toContain(
      'the context window of model "my-finetune" is not known; assuming 32768 tokens (set context_window in the profile or pass --context-window TOKENS)',
    );

    const badReserve = await finished(
      startHarness(
        [
          "run",
          "--workspace",
          await workspaceWith({}),
          "--profile",
          "table",
          "--context-window",
          "1000",
          "go",
        ],
        { env },
      ),
    );
    expectExit(badReserve, 64);
    expect(badReserve.stderr).toContain(
      "reply_reserve (127990) must be smaller than the context window (1000 tokens, from the flag)",
    );
  });
});
