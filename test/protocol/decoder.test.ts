import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeStream, ProtocolError, StreamDecoder, streamEventSchema } from "../../src/protocol/decoder.js";
import { splitAt } from "../support/split.js";

async function* from(events: unknown[]) {
  for (const event of events) yield event;
}

const end = (reason = "tool_calls") => ({ type: "end", reason });
const delta = (call_id: string, args: string, name?: string) =>
  name === undefined
    ? { type: "tool_call_delta", call_id, arguments: args }
    : { type: "tool_call_delta", call_id, name, arguments: args };

async function failure(events: unknown[]) {
  const outcome = await decodeStream(from(events));
  if ("reply" in outcome) throw new Error("expected a protocol error");
  return outcome;
}

describe("stream decoder", () => {
  it("decodes text and several interleaved calls only after a normal end", async () => {
    const outcome = await decodeStream(
      from([
        { type: "text_delta", text: "Hel" },
        { type: "text_delta", text: "lo" },
        delta("a", '{"path":', "read_file"),
        delta("b", '{"pattern":"x"', "grep"),
        delta("a", '"a.txt"}'),
        delta("b", "}"),
        { type: "usage", usage: { input_tokens: 3, output_tokens: 4 } },
        end(),
      ]),
    );
    expect(outcome).toEqual({
      reply: {
        text: "Hello",
        calls: [
          { id: "a", name: "read_file", arguments: { path: "a.txt" } },
          { id: "b", name: "grep", arguments: { pattern: "x" } },
        ],
        stop_reason: "tool_calls",
        usage: { input_tokens: 3, output_tokens: 4 },
      },
    });
  });

  it.each(["length", "content_filter", "error", "cancelled"])(
    "an end with reason %s is a protocol error",
    async (reason) => {
      const outcome = await failure([delta("a", '{"path":"a.txt"}', "read_file"), end(reason)]);
      expect(outcome.error).toBeInstanceOf(ProtocolError);
      expect(outcome.evidence).toMatchObject({
        stop_reason: reason,
        calls: [{ id: "a", name: "read_file", arguments: '{"path":"a.txt"}' }],
      });
    },
  );

  it.each([
    ["a stream that ends without an end event", [delta("a", "{}", "read_file")]],
    ["an event after the end", [end("stop"), { type: "text_delta", text: "late" }]],
    ["an unknown event type", [{ type: "tool_call_complete", call_id: "a" }, end()]],
    ["a malformed known event", [{ type: "text_delta", text: 3 }, end()]],
    ["extra fields on an event", [{ type: "text_delta", text: "x", run: "rm -rf" }, end()]],
    ["a non-object event", ["text", end()]],
    [
      "a tool name that changes inside a call",
      [delta("a", "{", "read_file"), delta("a", "}", "write_file"), end()],
    ],
    ["a first fragment without a tool name", [delta("a", "{}"), end()]],
    ["argument JSON that does not parse", [delta("a", '{"path":', "read_file"), end()]],
    ["arguments that are an array", [delta("a", "[1]", "read_file"), end()]],
    ["arguments that are a string", [delta("a", '"x"', "read_file"), end()]],
    ["arguments that are null", [delta("a", "null", "read_file"), end()]],
  ])("%s is a protocol error", async (_name, events) => {
    const outcome = await failure(events);
    expect(outcome.error).toBeInstanceOf(ProtocolError);
  });

  it("keeps what arrived when the provider throws mid-stream", async () => {
    async function* cut() {
      yield { type: "text_delta", text: "working" };
      yield delta("a", '{"pa', "edit_file");
      throw new Error("socket hang up");
    }
    const outcome = await decodeStream(cut());
    expect("error" in outcome).toBe(true);
    if ("error" in outcome) {
      expect((outcome.error as Error).message).toBe("socket hang up");
      expect(outcome.evidence).toEqual({
        text: "working",
        calls: [{ id: "a", name: "edit_file", arguments: '{"pa' }],
        events: 2,
      });
    }
  });

  it("never repairs partial JSON into an executable call", () => {
    const decoder = new StreamDecoder();
    decoder.push(delta("a", '{"path":"a.txt"', "write_file"));
    decoder.push(end("stop"));
    expect(() => decoder.finish()).toThrow(ProtocolError);
  });
});

const jsonObject = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8 }),
  fc.oneof(
    fc.string(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.string(), { maxLength: 3 }),
  ),
  { maxKeys: 5 },
);

describe("decoder properties", () => {
  it("any split of a valid reply's argument JSON decodes to the same calls", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(jsonObject, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        async (argsList, cuts) => {
          const events: unknown[] = [];
          argsList.forEach((args, i) => {
            const pieces = splitAt(JSON.stringify(args), cuts);
            for (const [j, piece] of pieces.entries())
              events.push(delta(`c${i}`, piece, j === 0 ? "tool" : undefined));
          });
          events.push(end());
          const outcome = await decodeStream(from(events));
          expect(outcome).toMatchObject({
            reply: { calls: argsList.map((args, i) => ({ id: `c${i}`, name: "tool", arguments: args })) },
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("any truncation of a reply yields no reply", async () => {
    await fc.assert(
      fc.asyncProperty(
        jsonObject,
        fc.nat(),
        fc.constantFrom(undefined, "length", "error", "cancelled", "content_filter"),
        async (args, cut, reason) => {
          const text = JSON.stringify(args);
          const events: unknown[] = [
            { type: "text_delta", text: "t" },
            ...splitAt(text, [1, 3, 7]).map((p, j) => delta("c", p, j === 0 ? "tool" : undefined)),
          ];
          const kept = events.slice(0, (cut % events.length) + 1);
          if (reason !== undefined) kept.push(end(reason));
          const outcome = await decodeStream(from(kept));
          expect("reply" in outcome).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("event checks", () => {
  it("accept and give exactly what the schema does, for near-miss events too", () => {
    // Text and call deltas are checked by hand first; the schema stays the judge of everything.
    const value = fc.oneof(
      fc.string({ maxLength: 3 }),
      fc.constant(""),
      fc.integer(),
      fc.constant(undefined),
      fc.constant(null),
      fc.constant({}),
    );
    const count = fc.oneof(fc.nat(), fc.constantFrom(-1, 0.5, Number.NaN), fc.constant(undefined));
    const usage = fc.oneof(
      fc.record(
        {
          input_tokens: count,
          output_tokens: count,
          reasoning_tokens: count,
          cached_tokens: count,
          cache_write_tokens: count,
          extra: count,
        },
        { requiredKeys: [] },
      ),
      value,
    );
    const shape = fc.record(
      {
        type: fc.constantFrom("text_delta", "tool_call_delta", "reasoning_delta", "usage", "end", "bogus"),
        text: value,
        call_id: value,
        name: value,
        arguments: value,
        signature: value,
        usage,
        reason: fc.oneof(
          fc.constantFrom("stop", "tool_calls", "length", "error", "cancelled", "nope"),
          value,
        ),
        message: value,
        extra: value,
      },
      { requiredKeys: ["type"] },
    );
    // The events taken by the check generated from the schema, near the schema's edge.
    const wellFormed = fc.oneof(
      fc.record({ type: fc.constant("usage"), usage }),
      fc.record(
        {
          type: fc.constant("end"),
          reason: fc.constantFrom("stop", "tool_calls", "length", "x"),
          message: value,
        },
        { requiredKeys: ["type", "reason"] },
      ),
      fc.record(
        { type: fc.constant("reasoning_delta"), text: fc.string(), signature: value },
        { requiredKeys: ["type", "text"] },
      ),
    );
    const events = fc.oneof(shape, wellFormed);
    const odd = fc.oneof(
      events,
      events.map((fields) => Object.assign(Object.create(null) as object, fields)),
      events.map((fields) => Object.assign(new (class Event {})(), fields)),
      fc.constant(null),
      fc.constant("text_delta"),
    );
    let checked = 0;
    fc.assert(
      fc.property(odd, (raw) => {
        const expected = streamEventSchema.safeParse(raw);
        const decoder = new StreamDecoder();
        let got: unknown;
        let thrown: unknown;
        try {
          got = decoder.push(raw);
        } catch (error) {
          thrown = error;
        }
        if (!expected.success) {
          expect(thrown).toBeInstanceOf(ProtocolError);
          expect((thrown as Error).message).toMatch(/malformed stream event/);
          return;
        }
        // A well-formed event can still break a rule of the stream (a call's first fragment
        // without its tool's name); that is never reported as a malformed event.
        if (thrown !== undefined) {
          expect(thrown).toBeInstanceOf(ProtocolError);
          expect((thrown as Error).message).not.toMatch(/malformed/);
          return;
        }
        expect(got).toStrictEqual(expected.data);
        if (["usage", "end", "reasoning_delta"].includes((got as { type: string }).type)) checked += 1;
      }),
      { numRuns: 3000 },
    );
    // Enough of the rarer events passed to compare the generated check's output with the parse's.
    expect(checked).toBeGreaterThan(300);
  });
});
