// TypeScript counterparts of the 24 behaviour tests of the seed's lab harness (001, appendix E).
import { appendFile, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EngineError } from "../../src/engine/errors.js";
import { DEMO_GOAL, demoScript } from "../../src/examples/demo/script.js";
import { JournalError } from "../../src/journal/store.js";
import { decodeStream } from "../../src/protocol/decoder.js";
import { ProviderError } from "../../src/providers/provider.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import { sha256Hex } from "../../src/shared/hash.js";
import {
  count,
  helloAccepted,
  Recording,
  run,
  scripted,
  startedWriteWithoutResult,
  tempWorkspace,
  type Workspace,
} from "../support/session.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
});
afterEach(async () => ws.cleanup());

const demo = () => ({ script: demoScript, goal: DEMO_GOAL, acceptance: [helloAccepted(ws)] });

describe("lab harness behaviours", () => {
  it("1. the demo has a real effect and a verified end", async () => {
    const summary = await run(ws, demo());
    expect(summary.status).toBe("verified");
    expect(await ws.file("hello.txt")).toBe("hello, harness\n");
    const records = await ws.journal();
    expect(records.at(-1)?.type).toBe("run.finished");
    const results = records
      .filter((r) => r.type === "tool.result")
      .map((r) => (r.data as { status: string }).status);
    expect(results).toEqual(["ok", "ok"]);
  });

  it("2. resuming a finished session repeats no tool and makes no model request", async () => {
    await run(ws, demo());
    const started = count(await ws.journal(), "tool.started");
    const provider = new Recording(ScriptedProvider.fromFunction(demoScript, "test-script"));
    const summary = await run(ws, { ...demo(), provider });
    expect(summary.status).toBe("verified");
    expect(provider.requests).toHaveLength(0);
    expect(count(await ws.journal(), "tool.started")).toBe(started);
  });

  it("3. a saved completion is re-validated against the current workspace", async () => {
    await run(ws, demo());
    await writeFile(join(ws.root, "hello.txt"), "changed");
    const summary = await run(ws, demo());
    expect(summary.status).toBe("stopped");
    expect(summary.reason).toBe("acceptance_failed");
    const last = (await ws.journal()).at(-1);
    expect(last?.type).toBe("run.stopped");
  });

  it("4. the model's final text is not completion evidence", async () => {
    const summary = await run(ws, {
      turns: [{ text: "I fixed it", calls: [] }],
      acceptance: [helloAccepted(ws)],
    });
    expect(summary.status).toBe("stopped");
    expect(count(await ws.journal(), "run.finished")).toBe(0);
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
  });

  it("5. read-only blocks the side effect", async () => {
    const summary = await run(ws, { ...demo(), readOnly: true });
    expect(summary.status).toBe("stopped");
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
    const statuses = (await ws.events("tool.result")).map((r) => (r.data as { status: string }).status);
    expect(statuses).toContain("denied");
  });

  it("6. parent traversal is refused and nothing outside is read", async () => {
    await run(ws, {
      turns: [
        { calls: [{ id: "x", name: "read_file", arguments: { path: "../outside" } }] },
        { text: "done" },
      ],
    });
    const [result] = await ws.events("tool.result");
    expect(result?.data).toMatchObject({ status: "denied", error_type: "PATH_ESCAPE" });
    expect(JSON.stringify(result?.data)).not.toContain(ws.root);
  });

  it("7. a symlink escaping the workspace is refused", async () => {
    await symlink(join(ws.root, ".."), join(ws.root, "escape"));
    await run(ws, {
      turns: [
        { calls: [{ id: "x", name: "read_file", arguments: { path: "escape/anything" } }] },
        { text: "done" },
      ],
    });
    const [result] = await ws.events("tool.result");
    expect(result?.data).toMatchObject({ status: "denied", error_type: "PATH_ESCAPE" });
  });

  it("8. the journal's reserved directory cannot be written", async () => {
    const before = await readFile(join(ws.root, "hello.txt"));
    await run(ws, {
      turns: [
        {
          calls: [
            {
              id: "x",
              name: "write_file",
              arguments: { path: ".harness/sessions/s/events.jsonl", content: "oops" },
            },
          ],
        },
        { text: "done" },
      ],
    });
    const [result] = await ws.events("tool.result");
    expect(result?.data).toMatchObject({ status: "denied", error_type: "RESERVED_PATH" });
    const journal = await readFile(join(ws.root, ".harness/sessions/s/events.jsonl"), "utf8");
    expect(journal).not.toContain("oops\n");
    expect(await readFile(join(ws.root, "hello.txt"))).toEqual(before);
    await expect(ws.journal()).resolves.toBeTruthy();
  });

  it("9. bad schemas and unknown tools never dispatch", async () => {
    await run(ws, {
      turns: [
        {
          calls: [
            { id: "a", name: "shell", arguments: { command: "touch pwned" } },
            { id: "b", name: "read_file", arguments: { path: 1 } },
            { id: "c", name: "read_file", arguments: { path: "hello.txt", extra: true } },
            { id: "d", name: "write_file", arguments: { path: "new.txt" } },
          ],
        },
        { text: "done" },
      ],
    });
    const results = (await ws.events("tool.result")).map(
      (r) => r.data as { call_id: string; status: string; error_type: string },
    );
    expect(results.map((r) => [r.call_id, r.status, r.error_type])).toEqual([
      ["a", "invalid", "UNKNOWN_TOOL"],
      ["b", "invalid", "INVALID_ARGUMENTS"],
      ["c", "invalid", "INVALID_ARGUMENTS"],
      ["d", "invalid", "INVALID_ARGUMENTS"],
    ]);
    expect(count(await ws.journal(), "tool.started")).toBe(0);
    await expect(readFile(join(ws.root, "pwned"))).rejects.toThrow();
    await expect(readFile(join(ws.root, "new.txt"))).rejects.toThrow();
  });

  it("10. a stale version prevents the write", async () => {
    await run(ws, {
      script: (_messages, step) => {
        if (step === 0) return { calls: [{ id: "r", name: "read_file", arguments: { path: "hello.txt" } }] };
        if (step === 1) {
          return {
            calls: [
              {
                id: "w",
                name: "write_file",
                arguments: { path: "hello.txt", content: "replacement", expected_version: "0".repeat(64) },
              },
            ],
          };
        }
        return { text: "done" };
      },
    });
    const results = await ws.events("tool.result");
    expect(results[1]?.data).toMatchObject({ status: "conflict", error_type: "STALE_VERSION" });
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
  });

  it("11. a truncated model stream cannot execute", async () => {
    const summary = await run(ws, {
      turns: [
        {
          stream: [
            { type: "tool_call_delta", call_id: "x", name: "write_file", arguments: '{"path":' },
            { type: "end", reason: "length" },
          ],
        },
      ],
    });
    expect(summary).toMatchObject({ status: "stopped", reason: "protocol_error" });
    expect(count(await ws.journal(), "tool.started")).toBe(0);
    const [error] = await ws.events("model.protocol_error");
    expect(error?.data).toMatchObject({
      evidence: { calls: [{ id: "x", name: "write_file", arguments: '{"path":' }] },
    });
  });

  it("12. a stream without an end event is rejected", async () => {
    async function* partial() {
      yield { type: "text_delta", text: "partial" };
    }
    const outcome = await decodeStream(partial());
    expect("error" in outcome).toBe(true);
  });

  it("13. fragmented JSON arguments are reassembled", async () => {
    async function* fragments() {
      yield { type: "tool_call_delta", call_id: "x", name: "read_file", arguments: '{"path":' };
      yield { type: "tool_call_delta", call_id: "x", arguments: '"hello.txt"}' };
      yield { type: "end", reason: "tool_calls" };
    }
    const outcome = await decodeStream(fragments());
    expect(outcome).toMatchObject({
      reply: { calls: [{ id: "x", name: "read_file", arguments: { path: "hello.txt" } }] },
    });
  });

  it("14. a call id reused in a later reply stops the run before it runs", async () => {
    const call = { id: "repeat", name: "read_file", arguments: { path: "hello.txt" } };
    const summary = await run(ws, { turns: [{ calls: [call] }, { calls: [call] }] });
    expect(summary).toMatchObject({ status: "stopped", reason: "protocol_error" });
    expect(count(await ws.journal(), "tool.started")).toBe(1);
    expect(count(await ws.journal(), "model.reply")).toBe(1);
  });

  it("15. the model-request budget is enforced", async () => {
    const summary = await run(ws, { ...demo(), limits: { maxModelRequests: 1 } });
    expect(summary).toMatchObject({ status: "stopped", reason: "budget_exhausted" });
    expect(count(await ws.journal(), "model.started")).toBe(1);
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
  });

  it("16. the tool budget stops before the second side effect", async () => {
    const summary = await run(ws, { ...demo(), limits: { maxToolCalls: 1 } });
    expect(summary).toMatchObject({ status: "stopped", reason: "budget_exhausted" });
    expect(count(await ws.journal(), "tool.started")).toBe(1);
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
  });

  it("17. an unknown outcome blocks re-execution", async () => {
    // A session whose write call was started (intent durable) but whose outcome never was.
    const script = await startedWriteWithoutResult(ws, "unseen");
    // The effect happened (someone else's bytes now), but the journal cannot know.
    await writeFile(join(ws.root, "hello.txt"), "already changed");
    const provider = new Recording(ScriptedProvider.fromFunction(script, "test-script"));
    const summary = await run(ws, { provider, limits: { maxToolCalls: 10 } });
    expect(summary.status).toBe("review_required");
    expect(await ws.file("hello.txt")).toBe("already changed");
    expect(provider.requests).toHaveLength(0);
    const [result] = await ws.events("tool.result");
    expect(result?.data).toMatchObject({ status: "unknown", error_type: "UNKNOWN_OUTCOME", call_id: "w" });
    expect(count(await ws.journal(), "tool.started")).toBe(1);
    // Resuming again still refuses to guess.
    const again = await run(ws, { provider, limits: { maxToolCalls: 10 } });
    expect(again.status).toBe("review_required");
    expect(provider.requests).toHaveLength(0);
  });

  it("18. a large result keeps its full content as an artifact", async () => {
    const content = `${"甲".repeat(100)}\n`.repeat(20);
    await writeFile(join(ws.root, "big.txt"), content);
    const provider = new Recording(
      scripted({
        turns: [
          { calls: [{ id: "g", name: "read_file", arguments: { path: "big.txt" } }] },
          { text: "done" },
        ],
      }),
    );
    await run(ws, { provider, limits: { previewLimitBytes: 100 } });
    const [result] = await ws.events("tool.result");
    const data = result?.data as { content: string; artifact: { id: string; sha256: string; bytes: number } };
    expect(Buffer.byteLength(data.content)).toBeLessThanOrEqual(100);
    expect(data.content).not.toContain("\uFFFD");
    const raw = await readFile(join(ws.root, ".harness/sessions/s/artifacts", data.artifact.id));
    expect(sha256Hex(raw)).toBe(data.artifact.sha256);
    expect(raw.byteLength).toBe(data.artifact.bytes);
    for (let line = 1; line <= 20; line++) expect(raw.toString("utf8")).toContain(`${line}`);
    expect(raw.toString("utf8").split("甲".repeat(100)).length - 1).toBe(20);
    // The model sees the preview, the artifact id, its hash and how to read on.
    const observation = provider.requests[1]?.messages.find((m) => m.role === "tool");
    expect(observation?.content).toContain(data.artifact.id);
    expect(observation?.content).toContain("read_artifact");
  });

  it("19. cancellation is not success", async () => {
    const controller = new AbortController();
    controller.abort();
    const summary = await run(ws, { ...demo(), signal: controller.signal });
    expect(summary.status).toBe("cancelled");
    expect(count(await ws.journal(), "tool.started")).toBe(0);
    expect(count(await ws.journal(), "run.finished")).toBe(0);
    expect((await ws.journal()).at(-1)?.type).toBe("run.cancelled");
  });

  it("20. the writer lock excludes another writer", async () => {
    const first = await ws.store.openWriter("s", { create: true });
    try {
      await expect(run(ws, demo())).rejects.toMatchObject({ code: "LOCKED" });
    } finally {
      await first.close();
    }
    expect(await ws.file("hello.txt")).toBe("helo, harness\n");
  });

  it("21. a torn tail is not silently discarded", async () => {
    await run(ws, demo());
    const path = join(ws.root, ".harness/sessions/s/events.jsonl");
    await appendFile(path, '{"incomplete":');
    const before = await readFile(path);
    await expect(run(ws, demo())).rejects.toMatchObject({ code: "TORN_TAIL" });
    expect(await readFile(path)).toEqual(before);
  });

  it("22. a tampered record is detected", async () => {
    await run(ws, demo());
    const path = join(ws.root, ".harness/sessions/s/events.jsonl");
    const text = await readFile(path, "utf8");
    await writeFile(path, text.replace("I will read hello.txt first.", "I will read hello.txt later."));
    await expect(ws.journal()).rejects.toBeInstanceOf(JournalError);
    await expect(ws.journal()).rejects.toMatchObject({ code: "TAMPERED" });
  });

  it("23. a transient model error is retried without retrying tools", async () => {
    const inner = ScriptedProvider.fromFunction(demoScript, "test-script");
    let calls = 0;
    const flaky = {
      identity: inner.identity,
      async *stream(request: Parameters<typeof inner.stream>[0], signal: AbortSignal) {
        calls += 1;
        if (calls === 1) throw new ProviderError("SERVER", "temporary pre-reply failure");
        yield* inner.stream(request, signal);
      },
    };
    const summary = await run(ws, { ...demo(), provider: flaky });
    expect(summary.status).toBe("verified");
    expect(count(await ws.journal(), "model.retryable_error")).toBe(1);
    expect(count(await ws.journal(), "tool.started")).toBe(2);
    expect(summary.model_requests).toBe(4);
    expect(await ws.file("hello.txt")).toBe("hello, harness\n");
  });

  it("24. goal or policy cannot change on resume", async () => {
    await run(ws, demo());
    const before = (await ws.journal()).length;
    await expect(run(ws, { ...demo(), goal: "a different goal" })).rejects.toBeInstanceOf(EngineError);
    await expect(run(ws, { ...demo(), readOnly: true })).rejects.toMatchObject({ code: "IDENTITY_MISMATCH" });
    expect((await ws.journal()).length).toBe(before);
  });
});
