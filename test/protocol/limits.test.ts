import { describe, expect, it } from "vitest";
import { decodeStream, ProtocolError, replyEvidence, StreamDecoder } from "../../src/protocol/decoder.js";
import { DEFAULT_OUTPUT_LIMITS, type OutputLimits } from "../../src/protocol/limits.js";
import type { Reply } from "../../src/protocol/types.js";
import { canonicalJson } from "../../src/shared/hash.js";

async function* from(events: unknown[]) {
  for (const event of events) yield event;
}

const end = (reason = "tool_calls") => ({ type: "end", reason });
const delta = (call_id: string, args: string, name?: string) =>
  name === undefined
    ? { type: "tool_call_delta", call_id, arguments: args }
    : { type: "tool_call_delta", call_id, name, arguments: args };

const small: OutputLimits = {
  maxDepth: 4,
  maxStringChars: 10,
  maxCallArgumentsChars: 40,
  maxReplyArgumentsChars: 60,
  maxCalls: 3,
  maxNameChars: 12,
  maxCallIdChars: 8,
  maxTextChars: 20,
  maxStreamChars: 200,
};

const wideStrings: OutputLimits = { ...small, maxStringChars: 100 };

async function reply(events: unknown[], limits: OutputLimits = small): Promise<Reply> {
  const outcome = await decodeStream(from(events), undefined, limits);
  if (!("reply" in outcome)) throw new Error(`expected a reply, got ${String(outcome.error)}`);
  return outcome.reply;
}

async function protocolError(events: unknown[], limits: OutputLimits = small) {
  const outcome = await decodeStream(from(events), undefined, limits);
  if ("reply" in outcome) throw new Error("expected a protocol error");
  expect(outcome.error).toBeInstanceOf(ProtocolError);
  return { message: (outcome.error as Error).message, evidence: outcome.evidence };
}

/** Everything a decoded reply holds must be journal-ready: canonical JSON never throws on it. */
function expectRecordable(value: unknown): void {
  expect(() => canonicalJson(value)).not.toThrow();
}

describe("output limits: a call whose arguments break one is refused, paired with its id", () => {
  it.each([
    ["nesting deeper than the limit", '{"a":[[[[1]]]]}', "nested deeper than 4 levels"],
    ["a string longer than the limit", '{"a":"12345678901"}', "longer than 10 characters"],
    ["a key longer than the limit", '{"12345678901":1}', "longer than 10 characters"],
    ["a number that parses to Infinity", '{"n":1e999}', "out of range"],
    ["a lone surrogate in a value", '{"s":"\\ud800"}', "lone UTF-16 surrogate"],
    ["a lone surrogate in a key", '{"\\udc00":1}', "lone UTF-16 surrogate"],
  ])("%s", async (_name, args, reason) => {
    const decoded = await reply([delta("bad", args, "tool"), delta("ok", '{"a":1}', "tool"), end()]);
    expect(decoded.calls).toHaveLength(2);
    const [bad, ok] = decoded.calls;
    expect(bad).toMatchObject({ id: "bad", name: "tool", arguments: {} });
    expect(bad?.refused?.reason).toContain(reason);
    expect(bad?.refused?.characters).toBe(args.length);
    expect(ok).toEqual({ id: "ok", name: "tool", arguments: { a: 1 } });
    expectRecordable(decoded);
  });

  it("brackets and quotes inside strings do not count as nesting", async () => {
    const decoded = await reply([delta("a", '{"s":"[[[[[\\"{{{{"}', "tool"), end()], wideStrings);
    expect(decoded.calls[0]).toEqual({ id: "a", name: "tool", arguments: { s: '[[[[["{{{{' } });
  });

  it("a call whose arguments grow past the per-call limit stops being buffered", async () => {
    const decoded = await reply([
      delta("big", '{"a":"', "tool"),
      ...Array.from({ length: 10 }, () => delta("big", "xxxxxxxx")),
      delta("big", '"}'),
      end(),
    ]);
    expect(decoded.calls[0]?.refused).toEqual({
      reason: "the arguments are longer than 40 characters",
      characters: 6 + 80 + 2,
      head: `{"a":"${"x".repeat(80)}"}`,
    });
  });

  it("the call that takes the reply's total over the limit is refused; earlier ones stand", async () => {
    const thirty = `{"a":"${"y".repeat(22)}"}`;
    const decoded = await reply(
      [delta("a", thirty, "t"), delta("b", thirty, "t"), delta("c", thirty, "t"), end()],
      wideStrings,
    );
    expect(decoded.calls.map((c) => c.refused?.reason)).toEqual([
      undefined,
      undefined,
      "the reply's arguments together are longer than 60 characters",
    ]);
  });

  it("JSON nested 100,000 deep and a 20 MB string are refused under the default limits", async () => {
    const deep = `{"a":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    const huge = JSON.stringify({ path: "a.txt", content: "z".repeat(20 * 1024 * 1024) });
    const unclosed = "[".repeat(100_000);
    const decoded = await reply(
      [
        delta("deep", deep, "write_file"),
        delta("huge", huge, "write_file"),
        delta("open", `{"a":${unclosed}`, "x"),
        end(),
      ],
      DEFAULT_OUTPUT_LIMITS,
    );
    expect(decoded.calls.map((c) => [c.id, c.refused?.reason])).toEqual([
      ["deep", "the argument JSON is nested deeper than 64 levels"],
      ["huge", "the arguments are longer than 1048576 characters"],
      ["open", "the argument JSON is nested deeper than 64 levels"],
    ]);
    expect(decoded.calls[1]?.refused?.head.length).toBe(256);
    expectRecordable(decoded);
  });

  it("a depth of exactly the limit is accepted", async () => {
    const decoded = await reply([delta("a", '{"a":[[[1]]]}', "tool"), end()]);
    expect(decoded.calls[0]).toEqual({ id: "a", name: "tool", arguments: { a: [[[1]]] } });
  });
});

describe("output limits: a reply that breaks one as a whole is a protocol error with bounded evidence", () => {
  it("more calls than the limit", async () => {
    const events = ["a", "b", "c", "d"].map((id) => delta(id, "{}", "tool"));
    const { message, evidence } = await protocolError([...events, end()]);
    expect(message).toBe("the reply has more than 3 tool calls");
    expect(evidence.calls.map((c) => c.id)).toEqual(["a", "b", "c"]);
  });

  it("a tool name longer than the limit", async () => {
    const { message } = await protocolError([delta("a", "{}", "n".repeat(13)), end()]);
    expect(message).toBe("a tool name is longer than 12 characters");
  });

  it("a call id longer than the limit", async () => {
    const { message } = await protocolError([delta("i".repeat(9), "{}", "tool"), end()]);
    expect(message).toBe("a tool call id is longer than 8 characters");
  });

  it.each([
    ["tool name", delta("a", "{}", "to\ud800ol")],
    ["tool call id", delta("a\udc00", "{}", "tool")],
  ])("a %s with a lone surrogate", async (what, event) => {
    const { message, evidence } = await protocolError([event, end()]);
    expect(message).toBe(`a ${what} is not well-formed Unicode (lone surrogate)`);
    expectRecordable(evidence);
  });

  it("text over the limit fails at once, without buffering the rest", async () => {
    const { message, evidence } = await protocolError([
      { type: "text_delta", text: "0123456789" },
      { type: "reasoning_delta", text: "0123456789" },
      { type: "text_delta", text: "x" },
      end("stop"),
    ]);
    expect(message).toBe("the reply's text is longer than 20 characters");
    expect(evidence.events).toBe(3);
  });

  it("a stream that keeps sending arguments for refused calls ends at the stream limit", async () => {
    const events = [delta("a", "{", "tool"), ...Array.from({ length: 30 }, () => delta("a", "x".repeat(10)))];
    const { message } = await protocolError([...events, end()]);
    expect(message).toBe("the reply is longer than 200 characters");
  });

  it("evidence of a huge stream is clipped and says how long it was", async () => {
    const limits = { ...DEFAULT_OUTPUT_LIMITS };
    const text = "t".repeat(100_000);
    const args = `{"a":"${"q".repeat(3 * 1024 * 1024)}`;
    const { evidence } = await protocolError(
      [{ type: "text_delta", text }, delta("a", args, "tool"), end("length")],
      limits,
    );
    expect(evidence.text).toBe(`${"t".repeat(4096)}…[100000 characters in all]`);
    expect(evidence.calls[0]?.arguments).toBe(`${args.slice(0, 256)}…[${args.length} characters in all]`);
    expect(JSON.stringify(evidence).length).toBeLessThan(10_000);
  });

  it("an end message is clipped in the error", async () => {
    const { message } = await protocolError([{ type: "end", reason: "error", message: "m".repeat(50_000) }]);
    expect(message.length).toBeLessThan(1200);
  });
});

describe("odd Unicode that is not a limit breach", () => {
  it("lone surrogates in text and reasoning become U+FFFD; NUL, U+2028/2029 and controls are kept", async () => {
    const decoded = await reply(
      [
        { type: "text_delta", text: "a\ud800b\u0000\u2028\u2029\u001b[2J" },
        { type: "reasoning_delta", text: "r\udc00", signature: "s\ud800" },
        delta("c", '{"s":"\\u0000\\u2028\\u202e"}', "tool"),
        end(),
      ],
      wideStrings,
    );
    expect(decoded.text).toBe("a\ufffdb\u0000\u2028\u2029\u001b[2J");
    expect(decoded.reasoning).toEqual([{ text: "r\ufffd", signature: "s\ufffd" }]);
    expect(decoded.calls[0]?.arguments).toEqual({ s: "\u0000\u2028\u202e" });
    expectRecordable(decoded);
  });
});

describe("nothing but a ProtocolError leaves the decoder", () => {
  it("an event whose property getter throws is a protocol error, not a transport failure", () => {
    const decoder = new StreamDecoder(small);
    const hostile = {
      type: "text_delta",
      get text(): string {
        throw new RangeError("Maximum call stack size exceeded");
      },
    };
    expect(() => decoder.push(hostile)).toThrow(ProtocolError);
    expect(() => decoder.push(hostile)).toThrow(/could not be processed \(RangeError\)/);
  });

  it("replyEvidence clips a recorded reply's arguments", () => {
    const evidence = replyEvidence({
      text: "x",
      stop_reason: "tool_calls",
      calls: [{ id: "a", name: "t", arguments: { s: "w".repeat(100_000) } }],
    });
    expect(evidence.calls[0]?.arguments.length).toBeLessThan(4200);
  });
});
