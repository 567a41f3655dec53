import { describe, expect, it } from "vitest";
import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import { FileEqualsCheck } from "../../src/engine/acceptance.js";
import { MemoryJournalStore } from "../../src/journal/memory-store.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import type { WriteMode } from "../../src/rules/modes.js";
import { type PackSession, packTurn } from "../../src/session/pack.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";

/** The model writes the fixed greeting, then answers. */
const writeThenAnswer = (_m: unknown, step: number) =>
  step === 0
    ? { calls: [{ id: "w", name: "write_file", arguments: { path: "new.txt", content: "made\n" } }] }
    : { text: "made it" };

function pack(write: WriteMode): { session: PackSession; fs: MemoryWorkspaceFs; store: MemoryJournalStore } {
  const fs = new MemoryWorkspaceFs({ "hello.txt": "hello\n" });
  const store = new MemoryJournalStore();
  const policy = modePolicy({ write });
  return {
    fs,
    store,
    session: {
      sessionId: "p",
      mode: "new",
      goal: "make new.txt",
      store,
      workspace: { name: "pack", fingerprint: "0".repeat(64) },
      fs,
      artifacts: new MemoryArtifactStore(),
      tools: createFileTools(),
      provider: ScriptedProvider.fromFunction(writeThenAnswer, "pack-test"),
      policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
      acceptance: [new FileEqualsCheck(fs, "new.txt", "made\n")],
      harnessVersion: "pack-test",
    },
  };
}

const text = async (fs: MemoryWorkspaceFs, path: string) =>
  new TextDecoder().decode(await fs.readFile(path).catch(() => new Uint8Array()));

describe("a session over a pack (its own files, tools and checks)", () => {
  it("runs the pack's tools on the pack's files, journals them and verifies with the pack's check", async () => {
    const { session, fs, store } = pack("allow");
    const summary = await packTurn(session);
    expect(summary.status).toBe("verified");
    expect(await text(fs, "new.txt")).toBe("made\n");
    const records = await store.read("p");
    expect(records[0]?.type).toBe("session.started");
    expect(records.filter((r) => r.type === "tool.result").map((r) => r.data.name)).toEqual(["write_file"]);
  });

  it("denies an ask when the pack has no approver, and writes nothing", async () => {
    const { session, fs, store } = pack("ask");
    const summary = await packTurn(session);
    expect(summary.status).not.toBe("verified");
    expect(await text(fs, "new.txt")).toBe("");
    const result = (await store.read("p")).find((r) => r.type === "tool.result");
    expect(result?.type === "tool.result" && result.data.status).toBe("denied");
    expect(JSON.stringify(result?.data)).toContain("this session has no approver");
  });
});
