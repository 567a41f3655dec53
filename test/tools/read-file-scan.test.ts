import { isUtf8 } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { firstInvalidUtf8Offset } from "../../src/tools/files/common.js";
import { createReadFileTool, READ_MAX_FILE_BYTES } from "../../src/tools/files/read-file.js";
import { type ScanRequest, scanFile } from "../../src/tools/files/read-file-scan.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { Session } from "./helpers.js";

/** What a scan must find, computed from the whole file at once (as read_file did before it streamed). */
function wholeFile(bytes: Buffer, request: ScanRequest) {
  const lines: string[] = [];
  let total = 0;
  let decoded = 0;
  for (let start = 0; start < bytes.length; ) {
    const newline = bytes.indexOf(0x0a, start);
    const end = newline === -1 ? bytes.length : newline;
    total += 1;
    if (total >= request.offset && total < request.offset + request.limit && decoded <= request.budgetBytes) {
      const upTo = Math.min(end, start + request.lineCapBytes);
      lines.push(bytes.toString("utf8", start, upTo));
      decoded += upTo - start + 1;
    }
    start = end + 1;
  }
  return {
    version: sha256Hex(bytes),
    total,
    lines,
    crlf: bytes.includes("\r\n"),
    invalidUtf8At: isUtf8(bytes) ? -1 : firstInvalidUtf8Offset(bytes),
  };
}

/** The bytes in chunks of the given sizes (cycled), each chunk's memory reused as a disk read reuses it. */
async function* chunked(bytes: Buffer, sizes: readonly number[]): AsyncGenerator<Uint8Array> {
  const reused = new Uint8Array(Math.max(...sizes));
  for (let start = 0, i = 0; start < bytes.length; i++) {
    const size = sizes[i % sizes.length] as number;
    const part = bytes.subarray(start, start + size);
    reused.set(part);
    yield reused.subarray(0, part.length);
    reused.fill(0xff);
    start += part.length;
  }
}

// Pieces that put line ends, CRs and every kind of UTF-8 sequence (and broken ones) next to chunk edges.
const piece = fc.constantFrom(
  "a",
  "\n",
  "\r\n",
  "\r",
  "é",
  "€",
  "😀",
  "\u{10FFFF}",
  Buffer.from([0xe2, 0x82]),
  Buffer.from([0xf0, 0x9f, 0x98]),
  Buffer.from([0x80]),
  Buffer.from([0xc0, 0xaf]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf5]),
);

describe("scanFile", () => {
  it("finds what a whole-file read finds, wherever the chunks are cut", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(piece, { maxLength: 60 }),
        fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 5 }),
        fc.record({
          offset: fc.integer({ min: 1, max: 8 }),
          limit: fc.integer({ min: 1, max: 8 }),
          budgetBytes: fc.integer({ min: 0, max: 40 }),
          lineCapBytes: fc.integer({ min: 1, max: 12 }),
        }),
        async (pieces, sizes, request) => {
          const bytes = Buffer.concat(pieces.map((p) => (typeof p === "string" ? Buffer.from(p) : p)));
          expect(await scanFile(chunked(bytes, sizes), request)).toEqual(wholeFile(bytes, request));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("refuses a file over read_file's size limit without reading past it", async () => {
    const fs = new MemoryWorkspaceFs({ "huge.txt": new Uint8Array(READ_MAX_FILE_BYTES + 1).fill(0x61) });
    let chunks = 0;
    const readChunks = fs.readChunks.bind(fs);
    fs.readChunks = async function* (path, options) {
      for await (const chunk of readChunks(path, options)) {
        chunks += 1;
        yield chunk;
      }
    };
    await expect(new Session(fs).run(createReadFileTool(), { path: "huge.txt" })).rejects.toMatchObject({
      code: "OUTPUT_LIMIT",
      message: expect.stringContaining(`huge.txt is larger than ${READ_MAX_FILE_BYTES} bytes`),
    });
    // The default 1 MiB chunks: the limit is crossed by the 65th, and nothing after it is asked for.
    expect(chunks).toBe(65);
  });

  it("checks for cancellation before each chunk", async () => {
    let chunks = 0;
    const scan = scanFile(
      chunked(Buffer.from("abcdefgh"), [2]),
      { offset: 1, limit: 1, budgetBytes: 10, lineCapBytes: 10 },
      () => {
        chunks += 1;
        if (chunks === 3) throw new Error("cancelled");
      },
    );
    await expect(scan).rejects.toThrow("cancelled");
    expect(chunks).toBe(3);
  });
});

describe("read_file reads through readChunks", () => {
  it("never asks the workspace for the whole file", async () => {
    const fs = new MemoryWorkspaceFs({ "big.txt": "line\n".repeat(50_000) });
    fs.readFile = () => Promise.reject(new Error("read_file must not read a file whole"));
    let asked = 0;
    const readChunks = fs.readChunks.bind(fs);
    fs.readChunks = (path, options) => {
      asked += 1;
      return readChunks(path, { ...options, chunkBytes: 4096 });
    };
    const out = await new Session(fs).run(createReadFileTool(), { path: "big.txt", offset: 49_999 });
    expect(asked).toBe(1);
    expect(out.content.split("\n").slice(2)).toEqual([
      "lines 49999-50000 of 50000",
      "49999\tline",
      "50000\tline",
    ]);
    expect(out.data).toMatchObject({ version: sha256Hex("line\n".repeat(50_000)), total_lines: 50_000 });
  });
});
