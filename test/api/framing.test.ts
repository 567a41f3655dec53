import { describe, expect, it } from "vitest";
import { encodeLine, LineDecoder } from "../../src/api/index.js";

const values = (decoded: ReturnType<LineDecoder["push"]>) => decoded.map((d) => (d.ok ? d.value : d.error));

describe("LineDecoder", () => {
  it("splits on \\n only: U+2028 and U+2029 inside a string survive, raw or escaped", () => {
    const decoder = new LineDecoder();
    const raw = `{"text":"a\u2028b\u2029c"}\n`;
    const escaped = '{"text":"a\\u2028b\\u2029c"}\n';
    expect(values(decoder.push(Buffer.from(raw + escaped)))).toEqual([
      { text: "a\u2028b\u2029c" },
      { text: "a\u2028b\u2029c" },
    ]);
  });

  it("joins a line cut anywhere, even inside a multi-byte character, and strips a trailing \\r", () => {
    const bytes = Buffer.from('{"a":"é€😀"}\r\n{"b":1}\n');
    for (let cut = 1; cut < bytes.length; cut++) {
      const decoder = new LineDecoder();
      const out = [...decoder.push(bytes.subarray(0, cut)), ...decoder.push(bytes.subarray(cut))];
      expect(values(out)).toEqual([{ a: "é€😀" }, { b: 1 }]);
    }
  });

  it("skips blank lines and reports a line that is not JSON, then goes on", () => {
    const decoder = new LineDecoder();
    const out = decoder.push(Buffer.from('\n  \r\nnot json\n{"ok":true}\n'));
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ ok: false, error: "parse" });
    expect(out[1]).toEqual({ ok: true, value: { ok: true } });
  });

  it("reports a line over the cap once, skips to its end, and decodes the next line", () => {
    const decoder = new LineDecoder(16);
    const out = [
      ...decoder.push(Buffer.from('{"a":"0123456789')),
      ...decoder.push(Buffer.from("0123456789")),
      ...decoder.push(Buffer.from('"}\n{"b":2}\n')),
    ];
    expect(values(out)).toEqual(["too_long", { b: 2 }]);
    const whole = new LineDecoder(8).push(Buffer.from('{"a":"0123456789"}\n[1]\n'));
    expect(values(whole)).toEqual(["too_long", [1]]);
  });

  it("decodes a last line without its newline at the end of the stream", () => {
    const decoder = new LineDecoder();
    expect(decoder.push(Buffer.from('{"a":1}'))).toEqual([]);
    expect(values(decoder.end())).toEqual([{ a: 1 }]);
    expect(decoder.end()).toEqual([]);
  });
});

describe("encodeLine", () => {
  it("writes one line with U+2028/U+2029 escaped, which decodes back to the same value", () => {
    const value = { text: "x\u2028y\u2029z\n", n: 1 };
    const line = encodeLine(value);
    expect(line).toBe('{"text":"x\\u2028y\\u2029z\\n","n":1}\n');
    expect(line.includes("\u2028") || line.includes("\u2029")).toBe(false);
    expect(values(new LineDecoder().push(Buffer.from(line)))).toEqual([value]);
  });
});

describe("framing, for any values and any chunking", () => {
  it("decodes what encodeLine wrote, however the bytes are cut", async () => {
    const fc = await import("fast-check");
    const text = fc.string({
      unit: fc.constantFrom("a", "é", "😀", "\u2028", "\u2029", "\n", "\r", '"', "\\", " "),
    });
    const value = fc.record({ text, n: fc.integer(), list: fc.array(text, { maxLength: 3 }) });
    fc.assert(
      fc.property(
        fc.array(value, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (values, cuts) => {
          const bytes = Buffer.from(values.map(encodeLine).join(""));
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const decoder = new LineDecoder();
          const out: unknown[] = [];
          let from = 0;
          for (const point of [...points, bytes.length]) {
            for (const line of decoder.push(bytes.subarray(from, point)))
              out.push(line.ok ? line.value : line);
            from = point;
          }
          out.push(...decoder.end().map((line) => (line.ok ? line.value : line)));
          expect(out).toEqual(values);
        },
      ),
      { numRuns: 300 },
    );
  });
});
