import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BIN,
  childEnv,
  ensureBuilt,
  finished,
  ofType,
  readJournal,
  removeTempDirs,
  sessionDir,
  sessionIds,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * `/image PATH message` in `harness chat` (line mode) through the built CLI: the image is stored
 * as a session artifact whose bytes are the file's, user.input names it by digest, and the model
 * is sent it. An image over the byte limit is refused with the limit named and nothing recorded.
 */

/** A scripted model answering with the last user message and how many images it carried. */
const ECHO_LAST_USER =
  'export default function echo(messages) { const user = messages.filter((m) => m.role === "user").at(-1); return { text: "got " + user.content + " images=" + (user.images ?? []).length }; }\n';
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** A PNG signature and IHDR header naming the size, padded to `size` bytes. */
function png(width: number, height: number, size: number): Buffer {
  const bytes = Buffer.alloc(size);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write("IHDR", 12, "ascii");
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return bytes;
}

describe("harness chat /image in line mode", () => {
  let config: string;
  let script: string;
  beforeAll(async () => {
    ensureBuilt();
    config = join(await tempDir("harness-chat-config-"), "config.json");
    await writeFile(config, "{}");
    script = join(await tempDir("harness-script-"), "echo.mjs");
    await writeFile(script, ECHO_LAST_USER);
  });
  afterAll(removeTempDirs);

  function chat(workspace: string, input: string) {
    const child = spawn(process.execPath, [BIN, "chat", "--script", script], {
      cwd: workspace,
      env: { ...childEnv(), HARNESS_CONFIG: config },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end(input);
    return finished(child);
  }

  it("records user.input.images by digest, and the artifact's bytes are the file's", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const image = png(40, 30, 300);
    image.write("distinct tail bytes", 200, "ascii");
    await writeFile(join(workspace, "shot.png"), image);
    const result = await chat(workspace, "/image shot.png what is this?\n");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("got what is this? images=1");
    const [id = ""] = sessionIds(workspace);
    const inputs = ofType(await readJournal(workspace, id), "user.input");
    const digest = sha256(image);
    expect(inputs.map((r) => [r.data.text, r.data.images])).toEqual([
      [
        "what is this?",
        [{ artifact: digest, sha256: digest, media_type: "image/png", bytes: 300, width: 40, height: 30 }],
      ],
    ]);
    const stored = await readFile(join(sessionDir(workspace, id), "artifacts", digest));
    expect(stored.equals(image)).toBe(true);
  });

  it("refuses an image over the byte limit, naming it, and records nothing", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const big = png(10, 10, 5 * 1024 * 1024 + 1);
    await writeFile(join(workspace, "big.png"), big);
    const result = await chat(workspace, "/image big.png look\n");
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).toContain(
      `${5 * 1024 * 1024 + 1} bytes, over the image limit of ${5 * 1024 * 1024} bytes (5 MB)`,
    );
    expect(result.stdout).not.toContain("got look");
    // Chat opens its session's journal on the first message sent: a refused image leaves none.
    expect(result.stdout).toContain("nothing was recorded (no message was sent)");
    expect(sessionIds(workspace)).toEqual([]);
  });
});
