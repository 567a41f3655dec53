import { Readable } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ArtifactRef, ArtifactSink, ArtifactStore } from "../../src/artifacts/store.js";
import { OutputCapture } from "../../src/sandbox/capture.js";

/** Records what reaches the store, to check the artifact holds exactly the stream's bytes. */
class RecordingStore implements ArtifactStore {
  readonly finished: Buffer[] = [];
  opened = 0;
  async read(): Promise<Uint8Array | undefined> {
    return undefined;
  }
  async put(bytes: Uint8Array): Promise<ArtifactRef> {
    return { id: "x", sha256: "0".repeat(64), bytes: bytes.length };
  }
  async open(): Promise<ArtifactSink> {
    this.opened++;
    const parts: Buffer[] = [];
    return {
      write: async (chunk) => {
        parts.push(Buffer.from(chunk));
      },
      finish: async () => {
        const all = Buffer.concat(parts);
        this.finished.push(all);
        return { id: "id", sha256: "0".repeat(64), bytes: all.length };
      },
      abort: async () => undefined,
    };
  }
}

async function capture(chunks: Buffer[], headBytes: number, tailBytes: number) {
  const store = new RecordingStore();
  const output = new OutputCapture({ headBytes, tailBytes }, store);
  await output.consume(Readable.from(chunks));
  return { summary: await output.finish(), store };
}

describe("OutputCapture", () => {
  it("keeps exactly the head and the tail, counts bytes and lines, and stores every byte", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc
            .uint8Array({ maxLength: 64 })
            .map((bytes) => Buffer.from(bytes.map((b) => (b % 2 ? 0x0a : 0x61)))),
          {
            maxLength: 20,
          },
        ),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 40 }),
        async (chunks, headBytes, tailBytes) => {
          const all = Buffer.concat(chunks);
          const { summary, store } = await capture(chunks, headBytes, tailBytes);
          const text = all.toString();
          expect(summary.bytes).toBe(all.length);
          const newlines = text.split("\n").length - 1;
          expect(summary.lines).toBe(newlines + (all.length > 0 && !text.endsWith("\n") ? 1 : 0));
          const truncated = all.length > headBytes + tailBytes;
          expect(summary.truncated).toBe(truncated);
          if (truncated) {
            expect(summary.head).toBe(text.slice(0, headBytes));
            expect(summary.tail).toBe(text.slice(text.length - tailBytes));
            expect(summary.omittedBytes).toBe(all.length - headBytes - tailBytes);
          } else {
            expect(summary.head + summary.tail).toBe(text);
          }
          if (all.length === 0) {
            expect(store.opened).toBe(0);
            expect(summary.artifact).toBeNull();
          } else {
            expect(store.finished).toHaveLength(1);
            expect(store.finished[0]!.equals(all)).toBe(true);
          }
        },
      ),
    );
  });

  it("never cuts a UTF-8 character into replacement characters at the preview edges", async () => {
    const text = "é".repeat(100); // 2 bytes each
    const { summary } = await capture([Buffer.from(text)], 7, 7);
    expect(summary.head).toBe("é".repeat(3));
    expect(summary.tail).toBe("é".repeat(3));
    expect(summary.head + summary.tail).not.toContain("\uFFFD");
  });

  it("keeps counting and previewing when the artifact store fails, and says so without paths", async () => {
    const failing: ArtifactStore = {
      read: async () => undefined,
      put: async () => {
        throw new Error("unused");
      },
      open: async () => {
        throw Object.assign(new Error("ENOSPC: no space left on device, open '/secret/host/path'"), {
          code: "ENOSPC",
        });
      },
    };
    const output = new OutputCapture({ headBytes: 4, tailBytes: 4 }, failing);
    await output.consume(Readable.from([Buffer.from("0123456789")]));
    const summary = await output.finish();
    expect(summary.bytes).toBe(10);
    expect(summary.head).toBe("0123");
    expect(summary.tail).toBe("6789");
    expect(summary.artifact).toBeNull();
    expect(summary.artifactError).toBe("the output could not be stored (ENOSPC)");
  });
});
