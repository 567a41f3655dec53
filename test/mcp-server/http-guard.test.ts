import { describe, expect, it } from "vitest";
import { refusal, requestOrigins } from "../../src/mcp-server/http-guard.js";

describe("which Host and Origin the HTTP server answers (DNS rebinding)", () => {
  const loopback = requestOrigins({ host: "127.0.0.1", port: 8765 });

  it("answers its own address and the loopback names, each with its port", () => {
    for (const host of ["127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765"])
      expect(refusal(host, undefined, loopback), host).toBeUndefined();
  });

  it("refuses another name, another port, a missing Host", () => {
    for (const host of [
      "evil.example:8765",
      "localhost.evil.example:8765",
      "127.0.0.1:80",
      "127.0.0.1",
      "8765",
    ])
      expect(refusal(host, undefined, loopback), host).toContain("Host");
    expect(refusal(undefined, undefined, loopback)).toContain("missing");
  });

  it("takes a browser request only from its own origins or ones the operator added", () => {
    expect(refusal("127.0.0.1:8765", "http://127.0.0.1:8765", loopback)).toBeUndefined();
    expect(refusal("127.0.0.1:8765", "http://localhost:8765", loopback)).toBeUndefined();
    for (const origin of [
      "http://evil.example",
      "http://127.0.0.1:9999",
      "https://127.0.0.1:8765",
      "null",
      "garbage",
    ])
      expect(refusal("127.0.0.1:8765", origin, loopback), origin).toContain("Origin");
    const inspector = requestOrigins(
      { host: "127.0.0.1", port: 8765 },
      { origins: ["http://localhost:6274/"], hosts: ["box.lan", "other.lan:9000", "[fe80::1]"] },
    );
    expect(refusal("127.0.0.1:8765", "http://localhost:6274", inspector)).toBeUndefined();
    expect(refusal("box.lan:8765", undefined, inspector)).toBeUndefined();
    expect(refusal("other.lan:9000", undefined, inspector)).toBeUndefined();
    expect(refusal("[fe80::1]:8765", undefined, inspector)).toBeUndefined();
    expect(refusal("box.lan:9000", undefined, inspector)).toContain("Host");
  });

  it("a server bound to a non-loopback address does not answer the loopback names", () => {
    const remote = requestOrigins({ host: "10.0.0.5", port: 80 });
    expect(refusal("10.0.0.5", undefined, remote)).toBeUndefined();
    expect(refusal("10.0.0.5:80", undefined, remote)).toBeUndefined();
    expect(refusal("localhost", undefined, remote)).toContain("Host");
  });
});
