import { describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/api/errors.js";
import type { ApprovalRequest } from "../../src/runtime/ports.js";
import { WireApprover } from "../../src/server/approvals.js";
import { TokenTable } from "../../src/server/identities.js";
import { catalogOf } from "../../src/server/session-factory.js";

const request: ApprovalRequest = {
  callId: "c1",
  tool: "write_file",
  arguments: { path: "a.txt" },
  effect: "local_write",
  callHash: "0".repeat(64),
  subject: { kind: "path", value: "a.txt" } as unknown as ApprovalRequest["subject"],
};

/** What the journal's approval/requested params say of `request`. */
const asked = { tool: "write_file", arguments: { path: "a.txt" } };

describe("WireApprover", () => {
  it("never shows an earlier ask recorded under the same call id for a different call", async () => {
    const approver = new WireApprover(
      "s",
      () => ({ approval_id: "s:3", tool: "write_file", arguments: { path: "harmless.txt" } }),
      () => {},
    );
    const answer = approver.request(request, new AbortController().signal);
    expect(approver.pending).toEqual([
      {
        approval_id: "s:c1",
        session: "s",
        call_id: "c1",
        tool: "write_file",
        effect: "local_write",
        arguments: { path: "a.txt" },
      },
    ]);
    expect(approver.has("s:3")).toBe(false);
    approver.respond("s:c1", "decline", "alice");
    expect((await answer).decision).toBe("deny");
  });

  it("waits for an answer; accept_session allows for the session, by the answering identity", async () => {
    const approver = new WireApprover(
      "s",
      () => ({ approval_id: "s:7", ...asked }),
      () => {},
    );
    const answer = approver.request(request, new AbortController().signal);
    expect(approver.pending).toEqual([{ approval_id: "s:7", ...asked }]);
    approver.respond("s:7", "accept_session", "alice");
    expect(await answer).toEqual({ decision: "allow", scope: "session", by: "identity:alice" });
    expect(approver.pending).toEqual([]);
    expect(() => approver.respond("s:7", "accept", "alice")).toThrow(
      expect.objectContaining({ code: ErrorCode.Conflict }),
    );
  });

  it("denies when the timeout passes or the turn is interrupted, never by itself otherwise", async () => {
    const timed = new WireApprover(
      "s",
      () => ({ approval_id: "s:1", ...asked }),
      () => {},
      20,
    );
    expect(await timed.request(request, new AbortController().signal)).toEqual({
      decision: "deny",
      scope: "once",
      by: "server",
      reason: "approval timed out",
    });
    const controller = new AbortController();
    const parked = new WireApprover(
      "s",
      () => ({ approval_id: "s:2", ...asked }),
      () => {},
    );
    const answer = parked.request(request, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(parked.has("s:2")).toBe(true);
    controller.abort();
    expect(await answer).toMatchObject({ decision: "deny", reason: "the turn was interrupted" });
    expect(
      (
        await new WireApprover(
          "s",
          () => undefined,
          () => {},
        ).request(request, AbortSignal.abort())
      ).decision,
    ).toBe("deny");
  });
});

describe("identities", () => {
  it("tokens name identities; an unknown, empty or missing token names none", () => {
    const table = new TokenTable({ "token-aaaaaaaaaaaaaaaa": "alice", "token-bbbbbbbbbbbbbbbb": "bob" });
    expect(table.identify("token-bbbbbbbbbbbbbbbb")).toBe("bob");
    expect(table.identify("token-bbbbbbbbbbbbbbb")).toBeUndefined();
    expect(table.identify("")).toBeUndefined();
    expect(table.identify(undefined)).toBeUndefined();
  });

  it("an identity's catalog bounds the tools asked for, and a bare deny rule removes its tool", () => {
    expect(catalogOf(undefined, {})).toBeUndefined();
    expect(catalogOf("coding", { tools: "readonly" })).toBe(
      "read_file,glob,grep,read_artifact,batch,web_fetch",
    );
    expect(catalogOf(undefined, { deny: ["shell", "write_file(src/**)"] })).toBe(
      "read_file,write_file,edit_file,glob,grep,read_artifact,batch,web_fetch",
    );
    expect(catalogOf("read_file,shell", { tools: "coding", deny: ["shell"] })).toBe("read_file");
    expect(() => catalogOf("shell-only", { deny: ["shell"] })).toThrow(/none of the tools/);
  });
});
