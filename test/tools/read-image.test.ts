import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { IMAGE_MAX_BYTES, IMAGE_MAX_SIDE } from "../../src/tools/files/image.js";
import { createReadFileTool } from "../../src/tools/files/read-file.js";
import { FACTORIES, type FsFixture } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

const readFile = createReadFileTool();

/** A PNG header (signature and IHDR) for width x height, padded to `size` bytes. */
function png(width: number, height: number, size = 64): Uint8Array {
  const bytes = Buffer.alloc(Math.max(size, 33));
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write("IHDR", 12, "ascii");
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  bytes[24] = 8;
  bytes[25] = 6;
  return bytes;
}

describe.each(FACTORIES)("read_file on an image (%s)", (_name, factory) => {
  let fixture: FsFixture | undefined;
  const open = async (files: Record<string, string | Uint8Array>): Promise<Session> => {
    fixture = await factory(files);
    return new Session(fixture.fs);
  };
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });

  it("returns a reference to the image stored as an artifact, by digest, with its size", async () => {
    const image = png(640, 480);
    const session = await open({ "shots/screen.png": image });
    const out = await session.run(readFile, { path: "shots/screen.png" });
    const digest = sha256Hex(image);
    expect(out.data).toEqual({
      path: "shots/screen.png",
      version: digest,
      image: {
        artifact: digest,
        sha256: digest,
        media_type: "image/png",
        bytes: 64,
        width: 640,
        height: 480,
      },
    });
    expect(out.content).toContain("image: PNG, 640x480 pixels, 64 bytes");
    expect(Buffer.from((await session.artifacts.read(digest)) ?? []).equals(image)).toBe(true);
  });

  it("refuses an image over the byte limit, naming the limit, and stores nothing", async () => {
    const session = await open({ "big.png": png(100, 100, IMAGE_MAX_BYTES + 1) });
    const error = await session.fail(readFile, { path: "big.png" }, "OUTPUT_LIMIT");
    expect(error.message).toContain(`over the image limit of ${IMAGE_MAX_BYTES} bytes (5 MB)`);
    expect(error.message).toContain("never resized");
  });

  it("refuses an image over the pixel limit, naming the limit", async () => {
    const session = await open({ "wide.png": png(IMAGE_MAX_SIDE + 1, 10) });
    const error = await session.fail(readFile, { path: "wide.png" }, "OUTPUT_LIMIT");
    expect(error.message).toContain(
      `${IMAGE_MAX_SIDE + 1}x10 pixels, over the limit of ${IMAGE_MAX_SIDE} pixels a side`,
    );
  });

  it("refuses a file named like an image whose header is not one", async () => {
    const session = await open({ "fake.png": "just text\n" });
    const error = await session.fail(readFile, { path: "fake.png" }, "SEMANTIC_VALIDATION_ERROR");
    expect(error.message).toContain("not a PNG, JPEG, GIF or WebP image");
  });
});
