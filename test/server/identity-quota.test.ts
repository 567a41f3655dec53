import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { QuotaPort, QuotaSpend } from "../../src/engine/quota-port.js";
import { serveSessionFactory } from "../../src/server/session-factory.js";

/*
 * A served session reserves each model request against the quota of the identity that opened
 * it (`harness serve --identity-quotas`). The quota here is a stand-in port allowing N requests;
 * the scripted model appends a line to requests.txt per request it receives and asks for a tool
 * call first, so a session needs two requests.
 */
const COUNTING_SCRIPT = `
import { appendFileSync } from "node:fs";
export default async function (messages) {
  appendFileSync(process.env.IDENTITY_QUOTA_REQUESTS_FILE, "request\\n");
  if (!messages.some((message) => message.role === "tool")) {
    return { calls: [{ id: "look", name: "list_files", arguments: {} }] };
  }
  return { text: "done" };
}
`;

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-identity-quota-")));
  process.env.HARNESS_KEY_FILE = join(root, "journal.key");
  process.env.IDENTITY_QUOTA_REQUESTS_FILE = join(root, "requests.txt");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A quota of `allowed` requests per identity; what was asked and settled, by scope. */
function quotas(allowed: number) {
  const asked: string[] = [];
  const settled: QuotaSpend[] = [];
  const port = (identity: string): QuotaPort => {
    const scope = `identity:${identity}`;
    return {
      scope,
      async reserve(estimate) {
        asked.push(scope);
        if (asked.filter((s) => s === scope).length > allowed) return { ok: false, why: "0 requests left" };
        expect(estimate.requests).toBe(1);
        return { ok: true, settle: async (actual) => void settled.push(actual) };
      },
    };
  };
  return { port, asked, settled };
}

async function workspaceDir(): Promise<string> {
  const dir = join(root, "ws");
  await mkdir(dir, { recursive: true });
  return dir;
}

async function serveOne(allowed: number) {
  const script = join(root, "count.mjs");
  await writeFile(script, COUNTING_SCRIPT);
  const quota = quotas(allowed);
  const factory = serveSessionFactory({ log: () => undefined, quotas: quota.port });
  const opened = await factory.open({
    workspace: await workspaceDir(),
    script: { path: script, code: true },
    sessionId: "served-1",
    options: {},
    identity: { name: "alice", policy: { host: true } },
    approver: () => ({ request: async () => ({ decision: "deny", scope: "once" }) as never }),
  });
  try {
    const summary = await opened.turn("look around", {}).run();
    const text = await readFile(join(root, "requests.txt"), "utf8").catch(() => "");
    const records = await opened.store.read("served-1");
    return { summary, quota, sent: text.split("\n").filter((l) => l === "request").length, records };
  } finally {
    await opened.close();
  }
}

describe("a served session with identity quotas", () => {
  it("stops before the request the identity's quota refuses: the model never receives it", async () => {
    const { summary, quota, sent, records } = await serveOne(1);
    expect(sent).toBe(1);
    expect(summary.status).toBe("stopped");
    expect(summary.reason).toBe("budget_exhausted");
    expect(summary.message).toContain("identity:alice");
    expect(quota.asked).toEqual(["identity:alice", "identity:alice"]);
    expect(quota.settled).toHaveLength(1);
    expect(records.filter((record) => record.type === "model.started")).toHaveLength(1);
  }, 30_000);

  it("a quota the session fits: each request reserved and settled once", async () => {
    const { summary, quota, sent } = await serveOne(5);
    expect(sent).toBe(2);
    expect(summary.reason).not.toBe("budget_exhausted");
    expect(quota.asked).toHaveLength(2);
    expect(quota.settled.map((spend) => spend.requests)).toEqual([1, 1]);
  }, 30_000);
});
