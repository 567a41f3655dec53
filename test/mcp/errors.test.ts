import { describe, expect, it } from "vitest";
import { callFailure } from "../../src/mcp/errors.js";

describe("what a failed MCP call means", () => {
  it("a request written to a stdio server that already exited (EPIPE) was not sent", () => {
    const pipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE" });
    expect(callFailure("s", pipe, undefined)).toMatchObject({ kind: "not_connected", outcome: "not_sent" });
    const wrapped = Object.assign(new Error("send failed"), { cause: pipe });
    expect(callFailure("s", wrapped, undefined)).toMatchObject({
      kind: "not_connected",
      outcome: "not_sent",
    });
  });

  it("an error nobody can place stays a possibly-applied call", () => {
    const other = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(callFailure("s", other, undefined)).toMatchObject({ outcome: "unknown" });
  });
});
