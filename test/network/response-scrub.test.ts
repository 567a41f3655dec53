import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { decoderFor, patternsOf, ScrubStream, scrubHeaders } from "../../src/network/response-scrub.js";

const VALUE = 'tok/en+Secret"value';
const PLACEHOLDER = "harness-placeholder-T-0123";
const replacements = [{ value: VALUE, placeholder: PLACEHOLDER }];

/** What the stream makes of `body` when it arrives cut at `cuts`. */
async function scrubbed(body: string, cuts: number[]): Promise<string> {
  const bytes = Buffer.from(body);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    chunks.push(bytes.subarray(from, cut));
    from = cut;
  }
  return text(Readable.from(chunks).pipe(new ScrubStream(patternsOf(replacements))));
}

describe("the response scrubber", () => {
  it("replaces the value wherever a chunk boundary falls, and keeps every other byte", async () => {
    const body = `before ${VALUE} middle ${VALUE}${VALUE} after`;
    const expected = `before ${PLACEHOLDER} middle ${PLACEHOLDER}${PLACEHOLDER} after`;
    for (let cut = 0; cut <= body.length; cut++) {
      expect(await scrubbed(body, [cut])).toBe(expected);
    }
    // One byte at a time.
    expect(
      await scrubbed(
        body,
        Array.from({ length: body.length }, (_, i) => i),
      ),
    ).toBe(expected);
  });

  it("catches the URL-encoded and JSON-escaped forms of the value", async () => {
    const body = `q=${encodeURIComponent(VALUE)} json=${JSON.stringify({ a: VALUE })}`;
    const out = await scrubbed(body, [5, 17]);
    expect(out).toBe(`q=${PLACEHOLDER} json={"a":"${PLACEHOLDER}"}`);
    expect(out).not.toContain("Secret");
  });

  it("leaves a body without the value byte for byte, a partial prefix at the end included", async () => {
    const body = `nothing here but ${VALUE.slice(0, 8)}`;
    expect(await scrubbed(body, [3, body.length - 2])).toBe(body);
  });

  it("scrubs header values and drops length and coding when the body is rewritten", () => {
    const headers = {
      "x-echo": `Bearer ${VALUE}`,
      "set-cookie": [`a=${encodeURIComponent(VALUE)}`, "b=1"],
      "content-length": "99",
      "content-encoding": "gzip",
    };
    expect(scrubHeaders(headers, replacements, true)).toEqual({
      "x-echo": `Bearer ${PLACEHOLDER}`,
      "set-cookie": [`a=${PLACEHOLDER}`, "b=1"],
    });
    expect(scrubHeaders(headers, replacements, false)).toMatchObject({ "content-length": "99" });
  });

  it("decodes gzip, deflate and br, and refuses a coding it cannot read", () => {
    expect(decoderFor({ "content-encoding": "gzip" })).toHaveLength(1);
    expect(decoderFor({ "content-encoding": "deflate, br" })).toHaveLength(2);
    expect(decoderFor({})).toEqual([]);
    expect(decoderFor({ "content-encoding": "identity" })).toEqual([]);
    expect(decoderFor({ "content-encoding": "zstd" })).toBeUndefined();
    expect(decoderFor({ "content-encoding": "gzip, compress" })).toBeUndefined();
  });
});
