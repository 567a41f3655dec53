import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { otlpReceiver, type ReceivedSpan } from "../otel/receiver.js";
import {
  BIN,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * OpenTelemetry from the journal, through the built CLI: a run with OTEL_EXPORTER_OTLP_ENDPOINT
 * set exports live to a loopback OTLP/HTTP receiver; `harness otel export` of the same session
 * later sends the very same spans (same ids, same parents), and again a second time.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

const SCRIPT = {
  replies: [
    {
      text: "",
      calls: [
        call("c1", "read_file", { path: "hello.txt" }),
        call("w1", "write_file", { path: "new.txt", content: "x\n" }),
        call("b1", "batch", { program: 'return await tools.read_file({ path: "hello.txt" });' }),
      ],
    },
    { text: "", calls: [call("a1", "agent", { task: "say hi", label: "kid", shell: "allow" })] },
    { text: "done" },
  ],
  agents: {
    kid: {
      replies: [
        { text: "", calls: [call("k1", "shell", { command: 'echo "tp=$TRACEPARENT"' })] },
        { text: "said hi" },
      ],
    },
  },
};

function cli(args: string[], env: NodeJS.ProcessEnv) {
  return finished(spawn(process.execPath, [BIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] }));
}

/** The spans as a set of (id, parent, name), in a stable order, to compare two exports. */
const shape = (spans: readonly ReceivedSpan[]) =>
  spans.map((s) => `${s.spanId} ${s.parentSpanId} ${s.name}`).sort();

describe("OpenTelemetry export", () => {
  it("exports a run live and `otel export` later sends identical spans, nested as the journal says", async () => {
    const receiver = await otlpReceiver();
    try {
      const workspace = await workspaceWith({ "hello.txt": "hello\n" });
      const script = join(await tempDir("harness-otel-script-"), "script.json");
      await writeFile(script, JSON.stringify(SCRIPT));
      const env = {
        ...childEnv(),
        HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-"),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_HEADERS: "x-team=qa",
        OTEL_SERVICE_NAME: "harness-under-test",
      };
      const id = "otel1";
      const run = await cli(
        [
          "run",
          "--script",
          script,
          "--workspace",
          workspace,
          "--session",
          id,
          "--write",
          "deny",
          "--shell",
          "allow",
          "--json",
          "go",
        ],
        env,
      );
      // Every change it tried was denied: the run stops (exit 2), which the session span says too.
      expectExit(run, 2);
      const live = [...receiver.spans];
      const journal = await readJournal(workspace, id);

      // One trace; the session span carries the acceptance verdict and nests everything.
      expect(new Set(live.map((s) => s.traceId)).size).toBe(1);
      expect(live.every((s) => s.service === "harness-under-test")).toBe(true);
      expect(receiver.headers.some((h) => h["x-team"] === "qa")).toBe(true);
      const byCall = (callId: string) => live.find((s) => s.attributes["gen_ai.tool.call.id"] === callId);
      const root = live.find((s) => s.name === "invoke_agent" && s.parentSpanId === "");
      expect(root?.attributes["harness.acceptance"]).toBe("not_checked");
      expect(root?.attributes["harness.status"]).toBe("stopped");
      expect(root?.attributes["harness.record_hash"]).toBe(journal[0]?.hash);

      const read = byCall("c1");
      expect(read?.name).toBe("execute_tool read_file");
      expect(read?.parentSpanId).toBe(root?.spanId);
      const started = ofType(journal, "tool.started").find((r) => r.data.call_id === "c1");
      expect(read?.attributes["harness.record_hash"]).toBe(started?.hash);
      expect(read?.spanId).toBe(started?.hash.slice(0, 16));
      expect(read?.attributes).toMatchObject({
        "harness.effect": "read_only",
        "harness.policy.decision": "allow",
        "harness.outcome": "ok",
        "gen_ai.operation.name": "execute_tool",
      });
      expect(read?.attributes["harness.sandbox"]).toEqual(expect.any(String));
      expect(read?.attributes["gen_ai.tool.call.arguments"]).toBeUndefined();

      const write = byCall("w1");
      expect(write?.attributes).toMatchObject({
        "harness.policy.decision": "deny",
        "harness.outcome": "denied",
        "harness.effect": expect.any(String),
        "harness.policy.rule": expect.any(String),
      });
      expect(write?.status.code).toBe(2);

      // A batch sub-call nests under its batch call; the sub-agent's turn under the agent call.
      expect(byCall("b1/1")?.parentSpanId).toBe(byCall("b1")?.spanId);
      const kid = live.find((s) => s.name === "invoke_agent" && s.parentSpanId !== "");
      expect(kid?.parentSpanId).toBe(byCall("a1")?.spanId);
      expect(kid?.attributes["gen_ai.agent.name"]).toBe("kid");
      expect(byCall("k1")?.parentSpanId).toBe(kid?.spanId);
      // The sub-agent's shell call got its own exported span as TRACEPARENT (the child continues
      // the parent's trace live, with the ids a later export derives).
      const kidResult = ofType(await readJournal(workspace, `${id}/kid`), "tool.result").find(
        (r) => r.data.call_id === "k1",
      );
      expect(JSON.stringify(kidResult?.data)).toContain(
        `tp=00-${byCall("k1")?.traceId}-${byCall("k1")?.spanId}-01`,
      );

      const chats = live.filter((s) => s.name.startsWith("chat "));
      expect(chats.length).toBe(ofType(journal, "model.started").length + 2);
      expect(chats.every((s) => s.parentSpanId !== "")).toBe(true);
      expect(receiver.metrics).toContain("gen_ai.client.operation.duration");

      // A later export of the session: the same spans, twice over.
      for (const round of [1, 2]) {
        receiver.spans.length = 0;
        const exported = await cli(["otel", "export", id, "--workspace", workspace, "--json"], env);
        expectExit(exported, 0);
        const summary = JSON.parse(exported.stdout) as { trace_id: string; spans: unknown[] };
        expect([round, summary.trace_id]).toEqual([round, live[0]?.traceId]);
        expect(shape(receiver.spans)).toEqual(shape(live));
        expect(summary.spans.length).toBe(live.length);
      }
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it("sends content only when asked, scrubbed of secret values", async () => {
    const receiver = await otlpReceiver();
    try {
      const secret = "s3cr3t-value-for-otel-test";
      const workspace = await workspaceWith({ "key.txt": `token=${secret}\n` });
      const script = join(await tempDir("harness-otel-script-"), "script.json");
      await writeFile(
        script,
        JSON.stringify({
          replies: [{ text: "", calls: [call("c1", "read_file", { path: "key.txt" })] }, { text: "ok" }],
        }),
      );
      const env = {
        ...childEnv(),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        HARNESS_OTEL_CONTENT: "1",
        OTEL_TEST_API_TOKEN: secret,
      };
      const run = await cli(
        ["run", "--script", script, "--workspace", workspace, "--session", "c", "--json", "go"],
        env,
      );
      expectExit(run, 0);
      const read = receiver.spans.find((s) => s.attributes["gen_ai.tool.call.id"] === "c1");
      const result = String(read?.attributes["gen_ai.tool.call.result"]);
      expect(result).toContain("[redacted:OTEL_TEST_API_TOKEN]");
      expect(result).not.toContain(secret);
      expect(JSON.stringify(receiver.spans)).not.toContain(secret);
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it("hands a shell call's processes TRACEPARENT: the exported execute_tool span's ids; none without an export", async () => {
    const receiver = await otlpReceiver();
    try {
      const script = join(await tempDir("harness-otel-script-"), "script.json");
      await writeFile(
        script,
        JSON.stringify({
          replies: [
            { text: "", calls: [call("s1", "shell", { command: 'printf "%s" "$TRACEPARENT" > tp.txt' })] },
            {
              text: "",
              calls: [
                call("b1", "shell", {
                  command: 'printf "%s" "$TRACEPARENT" > bg.txt; echo ready; sleep 30',
                  background: true,
                  ready: { log: "ready", timeout_ms: 30_000 },
                }),
              ],
            },
            { text: "ok" },
          ],
        }),
      );
      // harness's own TRACEPARENT (a traced CI job's) never passes the filter: only the call's does.
      const outer = "00-11111111111111111111111111111111-2222222222222222-01";
      const run = async (session: string, endpoint: string | undefined) => {
        const workspace = await workspaceWith({});
        const env: NodeJS.ProcessEnv = { ...childEnv(), TRACEPARENT: outer };
        delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
        delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
        if (endpoint !== undefined) env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
        const args = ["run", "--script", script, "--workspace", workspace, "--session", session];
        const result = await cli([...args, "--shell", "allow", "--write", "allow", "--json", "go"], env);
        expectExit(result, 0);
        return {
          workspace,
          text: await readFile(join(workspace, "tp.txt"), "utf8"),
          background: await readFile(join(workspace, "bg.txt"), "utf8"),
        };
      };

      const traced = await run("tp", receiver.endpoint);
      const span = receiver.spans.find((s) => s.attributes["gen_ai.tool.call.id"] === "s1");
      expect(span?.name).toBe("execute_tool shell");
      expect(traced.text).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const [, traceId, parentId] = traced.text.split("-");
      expect(traceId).toBe(span?.traceId);
      expect(parentId).toBe(span?.spanId);
      // The same ids a later `otel export` derives: the span starts at the call's tool.started.
      const started = ofType(await readJournal(traced.workspace, "tp"), "tool.started").find(
        (r) => r.data.call_id === "s1",
      );
      expect(parentId).toBe(started?.hash.slice(0, 16));
      const spawned = ofType(await readJournal(traced.workspace, "tp"), "process.spawned");
      expect(
        spawned.some((r) => ((r.data.env_names as string[] | undefined) ?? []).includes("TRACEPARENT")),
      ).toBe(true);

      // A background process gets its own call's span the same way.
      const backgroundSpan = receiver.spans.find((s) => s.attributes["gen_ai.tool.call.id"] === "b1");
      expect(backgroundSpan?.name).toBe("execute_tool shell");
      expect(traced.background).toBe(`00-${backgroundSpan?.traceId}-${backgroundSpan?.spanId}-01`);

      const untraced = await run("no-tp", undefined);
      expect(untraced.text).toBe("");
      expect(untraced.background).toBe("");
      const quiet = ofType(await readJournal(untraced.workspace, "no-tp"), "process.spawned");
      expect(
        quiet.some((r) => ((r.data.env_names as string[] | undefined) ?? []).includes("TRACEPARENT")),
      ).toBe(false);
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it("refuses to export without a configured endpoint (usage, exit 64)", async () => {
    const workspace = await workspaceWith({});
    const env = { ...childEnv() };
    delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    const result = await cli(["otel", "export", "nope", "--workspace", workspace], env);
    expectExit(result, 64);
    expect(result.stderr).toContain("OTEL_EXPORTER_OTLP_ENDPOINT");
  }, 60_000);
});
