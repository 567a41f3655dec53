import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNewEvent } from "../../../src/journal/vocabulary.js";
import { Executor } from "../../../src/sandbox/executor.js";
import { listensOn, tableListens } from "../../../src/sandbox/listening.js";
import { NoSandbox } from "../../../src/sandbox/none.js";
import { BackgroundProcesses } from "../../../src/tools/shell/background.js";
import { OutputRing } from "../../../src/tools/shell/output-ring.js";

const KEY = "sk-live-0123456789abcdef";
const executor = new Executor({ environment: { PATH: process.env.PATH, OPENAI_API_KEY: KEY } });
const profile = { sandbox: new NoSandbox(), env: {} };
const cleanup: string[] = [];
afterEach(async () => {
  for (const dir of cleanup.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function registryWith(events: AnyNewEvent[]): Promise<BackgroundProcesses> {
  const registry = new BackgroundProcesses({ graceMs: 200 });
  await registry.attach(async (event) => {
    events.push(event);
  });
  return registry;
}

async function start(registry: BackgroundProcesses, callId: string, command: string, extra: object = {}) {
  const workspace = await mkdtemp(join(tmpdir(), "harness-bg-"));
  cleanup.push(workspace);
  return registry.start({
    callId,
    command,
    keep: "turn",
    pty: false,
    readyTimeoutMs: 5_000,
    signal: new AbortController().signal,
    launch: (onOutput) =>
      executor.background({ argv: ["/bin/sh", "-c", command], workspace, profile, onOutput }),
    ...extra,
  });
}

describe("OutputRing", () => {
  it("keeps the last bytes, counts every byte, and says what a reader missed", () => {
    const ring = new OutputRing(8);
    ring.write(Buffer.from("abcdef"));
    expect(ring.read(undefined, 100)).toEqual({ text: "abcdef", next: 6, missed: 0 });
    ring.write(Buffer.from("ghijkl"));
    expect(ring.total).toBe(12);
    expect(ring.read(2, 100)).toEqual({ text: "efghijkl", next: 12, missed: 2 });
    expect(ring.read(10, 1)).toEqual({ text: "k", next: 11, missed: 0 });
    expect(ring.read(12, 100)).toEqual({ text: "", next: 12, missed: 0 });
    expect(ring.tail(3)).toBe("jkl");
  });
});

describe("listensOn", () => {
  it("reads a listening port from /proc/PID/net/tcp, and nothing for a closed one", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    expect(listensOn([process.pid], port)).toBe(true);
    await new Promise((resolve) => server.close(resolve));
    expect(listensOn([process.pid], port)).toBe(false);
    expect(tableListens("  sl  local rem st\n   0: 0100007F:1F90 00000000:0000 0A 0", 8080)).toBe(true);
    expect(tableListens("  sl  local rem st\n   0: 0100007F:1F90 00000000:0000 01 0", 8080)).toBe(false);
  });
});

describe("BackgroundProcesses", () => {
  it("journals start, readiness and stop; scrubs output; the turn's end stops it with no survivor", async () => {
    const events: AnyNewEvent[] = [];
    const registry = await registryWith(events);
    const outcome = await start(registry, "c1", `echo "key $OPENAI_API_KEY"; echo READY; sleep 30`, {
      ready: { log: "^READY$" },
    });
    expect(outcome).toMatchObject({ kind: "ready", id: "bg-c1", by: "log" });
    const read = registry.output("bg-c1", undefined, 1000)!;
    expect(read.text).not.toContain("0123456789abcdef");
    expect(registry.effectsOwner()).toBe("c1");
    const stopped = await registry.endTurn(false);
    expect(stopped[0]).toMatchObject({ process_id: "bg-c1", reason: "turn_end", survivors: 0 });
    expect(events.map((e) => e.type)).toEqual(["process.started", "process.ready", "process.stopped"]);
    registry.effectsCompared();
    expect(registry.effectsOwner()).toBeUndefined();
  }, 20_000);

  it("a process that is not ready in time is stopped and reported with its output", async () => {
    const events: AnyNewEvent[] = [];
    const registry = await registryWith(events);
    const outcome = await start(registry, "c2", "echo booting; sleep 30", {
      ready: { log: "READY", timeout_ms: 300 },
    });
    expect(outcome).toMatchObject({ kind: "timeout", id: "bg-c2" });
    expect(outcome.output).toContain("booting");
    expect(events.at(-1)).toMatchObject({
      type: "process.stopped",
      data: { reason: "not_ready", survivors: 0 },
    });
  }, 20_000);

  it("holds records while nobody journals and writes them at the next attach (a TTL between turns)", async () => {
    const events: AnyNewEvent[] = [];
    const registry = await registryWith(events);
    await start(registry, "c3", "sleep 30", { ttlMs: 200, keep: "session" });
    registry.detach();
    const deadline = Date.now() + 5_000;
    while (registry.running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(events.map((e) => e.type)).toEqual(["process.started", "process.ready"]);
    await registry.attach(async (event) => {
      events.push(event);
    });
    expect(events.at(-1)).toMatchObject({ type: "process.stopped", data: { reason: "ttl" } });
  }, 20_000);
});
