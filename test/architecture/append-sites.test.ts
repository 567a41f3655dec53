import { describe, expect, it } from "vitest";
import { appendCalls, appendViolations } from "./append-scan.js";
import { readModules, SRC } from "./import-graph.js";

/**
 * Who appends to a session's journal. A decision to append (resolve a review, adopt, apply, stop)
 * is only sound on the records read under the writer lock, so appending is kept to the places
 * built that way: the engine, undo, the PostgreSQL lease (it journals its own epoch) and the
 * session operations (src/session/operations/, each deciding under the lock). Anything else that
 * appends to a journal writer belongs in one of those.
 *
 * The scan (append-scan.ts) finds every call of a method named `append`. It cannot tell a journal
 * writer from another object with an `append` method, so those are listed below with their reason
 * and their exact number of calls (one more in such a file is a new site to judge).
 */

/** Folders (a trailing "/") and files where journal writers are appended to. */
const JOURNAL_APPENDERS: readonly string[] = [
  "engine/",
  "undo/",
  "session/operations/",
  "journal/pg/lease.ts",
  "journal/pg/leased.ts",
];

/** Files whose `.append(` calls are not on a journal writer: how many, and on what. */
const OTHER_APPENDS: ReadonlyMap<string, { calls: number; reason: string }> = new Map([
  ["mcp-server/http.ts", { calls: 1, reason: "Headers.append: an HTTP response header" }],
  ["cli/chat/controller.ts", { calls: 1, reason: "OutputTail.append: a running call's output in the chat" }],
]);

describe("appends to the journal", () => {
  const calls = appendCalls(readModules(SRC));

  it("happen only in the engine, undo, the PostgreSQL lease and the session operations", () => {
    expect(appendViolations(calls, JOURNAL_APPENDERS, OTHER_APPENDS)).toEqual([]);
  });

  it("lists no other append that is gone (the exceptions stay true)", () => {
    expect([...OTHER_APPENDS.keys()].filter((path) => !calls.has(path))).toEqual([]);
  });
});

describe("the check itself", () => {
  it("counts method calls named append, not comments, strings or other names", () => {
    const source = [
      "// writer.append([...]) in a comment",
      'const text = "writer.append(events)";',
      "await writer.append([event]);",
      "await writer\n  .append([event]);",
      "params.appendChild(node);",
      "append(x);",
    ].join("\n");
    expect(appendCalls(new Map([["cli/x.ts", source]]))).toEqual(new Map([["cli/x.ts", 2]]));
  });

  it("fails on an append planted outside the appenders, and on one more in a listed file", () => {
    const planted = appendCalls(
      new Map([
        ["engine/engine.ts", "await this.writer.append(events);"],
        ["session/operations/review.ts", "await writer.append(events);"],
        ["session/review.ts", "await writer.append(events);"],
        ["cli/commands/review.ts", "await writer.append(events);"],
        ["journal/pg/leased.ts", "await writer.append(events);"],
        ["journal/pg/store.ts", "await writer.append(events);"],
        ["mcp-server/http.ts", "headers.append(a, b); await writer.append(events);"],
      ]),
    );
    expect(appendViolations(planted, JOURNAL_APPENDERS, OTHER_APPENDS)).toEqual([
      "src/cli/commands/review.ts: 1 .append( call(s) outside the journal's appenders",
      "src/journal/pg/store.ts: 1 .append( call(s) outside the journal's appenders",
      "src/mcp-server/http.ts: 2 .append( call(s), 1 listed (Headers.append: an HTTP response header)",
      "src/session/review.ts: 1 .append( call(s) outside the journal's appenders",
    ]);
  });

  it("fails on a violation planted in the real tree", () => {
    const calls = appendCalls(readModules(SRC));
    for (const [path, count] of appendCalls(
      new Map([["server/planted.ts", "await writer.append([{ type: 'review.resolved', data }]);"]]),
    ))
      calls.set(path, count);
    expect(appendViolations(calls, JOURNAL_APPENDERS, OTHER_APPENDS)).toEqual([
      "src/server/planted.ts: 1 .append( call(s) outside the journal's appenders",
    ]);
  });
});
