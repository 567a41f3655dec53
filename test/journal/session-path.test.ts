import { describe, expect, it } from "vitest";
import {
  AGENT_LABEL_PATTERN,
  agentDepth,
  agentPath,
  assertSessionId,
  childSessionId,
  isAgentLabel,
  isRootSessionId,
  isSessionId,
  MAX_AGENT_DEPTH,
  parentSessionId,
  rootSessionId,
  sessionPaths,
} from "../../src/journal/session-path.js";
import { JournalError } from "../../src/journal/store.js";
import { validateRootSessionId, validateSessionId } from "../../src/session/session-id.js";
import { UsageError } from "../../src/session/usage-error.js";

/** Ids that must never name a session: each would be a path outside its folder, or not a plain name. */
const HOSTILE = [
  "",
  "a/../b",
  "a//b",
  "a/.x",
  "/a",
  "a/",
  "a/b.c",
  "a\0",
  "a/b\0",
  "a/..",
  "../a",
  "a\\b",
  "a/b\nc",
  "x".repeat(65),
  `${"x".repeat(65)}/b`,
  `a/${"l".repeat(33)}`,
  "a/artifacts",
  "a/ARTIFACTS",
  "a/-b",
  "a/ b",
  ["r", ..."123456789"].join("/"),
];

describe("session ids with sub-agent labels", () => {
  it("accepts a root id followed by up to MAX_AGENT_DEPTH labels", () => {
    expect(AGENT_LABEL_PATTERN.source).toBe("^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$");
    expect(MAX_AGENT_DEPTH).toBe(8);
    const deepest = ["20261130-064233-a1b2c3d4", ..."abcdefgh"].join("/");
    for (const id of [
      "s1",
      "a.b_c-d",
      "x".repeat(64),
      "p/helper",
      `p/${"l".repeat(32)}`,
      "p/a_1/B-2",
      deepest,
    ]) {
      expect(isSessionId(id)).toBe(true);
      expect(() => assertSessionId(id)).not.toThrow();
      expect(() => validateSessionId(id)).not.toThrow();
    }
    expect(isAgentLabel("helper")).toBe(true);
    expect(isAgentLabel("artifacts")).toBe(false);
    expect(isRootSessionId("p")).toBe(true);
    expect(isRootSessionId("p/helper")).toBe(false);
  });

  it("refuses every hostile id with the same clear errors", () => {
    for (const id of HOSTILE) {
      expect(isSessionId(id)).toBe(false);
      expect(() => assertSessionId(id)).toThrow(JournalError);
      expect(() => sessionPaths("/tmp/h/.harness", id)).toThrow(/invalid session id/);
      expect(() => validateSessionId(id)).toThrow(UsageError);
    }
    expect(() => assertSessionId("a/../b")).toThrow(
      'invalid session id "a/../b": use 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit',
    );
    // Control characters are shown escaped, never raw.
    expect(() => validateSessionId("a\u001b[2J")).toThrow('invalid session id "a\\u001b[2J"');
    expect(() => validateRootSessionId("p/helper")).toThrow(UsageError);
    expect(() => validateRootSessionId("p")).not.toThrow();
  });

  it("puts a sub-agent's folder inside its parent's", () => {
    expect(sessionPaths("/tmp/h/.harness", "p/a/b")).toEqual({
      sessionsDir: "/tmp/h/.harness/sessions",
      sessionDir: "/tmp/h/.harness/sessions/p/a/b",
      events: "/tmp/h/.harness/sessions/p/a/b/events.jsonl",
      lock: "/tmp/h/.harness/sessions/p/a/b/writer.lock",
    });
  });

  it("makes, splits and measures ids", () => {
    expect(childSessionId("p", "helper")).toBe("p/helper");
    expect(childSessionId("p/helper", "deep")).toBe("p/helper/deep");
    expect(parentSessionId("p/helper/deep")).toBe("p/helper");
    expect(parentSessionId("p/helper")).toBe("p");
    expect(parentSessionId("p")).toBeUndefined();
    expect(agentPath("p")).toBe("");
    expect(agentPath("p/a/b")).toBe("a/b");
    expect(rootSessionId("p/a/b")).toBe("p");
    expect(rootSessionId("p")).toBe("p");
    expect(agentDepth("p/a/b")).toBe(2);
    for (const label of ["", "a.b", "a/b", "..", "artifacts", "x".repeat(33)]) {
      expect(() => childSessionId("p", label)).toThrow(/invalid sub-agent label/);
    }
    expect(() => childSessionId("../p", "a")).toThrow(/invalid session id/);
    const deepest = ["p", ..."abcdefgh"].join("/");
    expect(() => childSessionId(deepest, "i")).toThrow(`${MAX_AGENT_DEPTH} levels deep`);
    expect(() => parentSessionId("a//b")).toThrow(JournalError);
  });
});
