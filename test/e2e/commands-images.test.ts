import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionDir,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * Command templates and attached images through the built CLI with a scripted model that answers
 * with the last user message it was sent: `/NAME args` expands ($ARGUMENTS, $1..$9), the expanded
 * text is the recorded input and command.expanded names the template's digest; a project's
 * template is refused until approved; `run --image` stores the image as an artifact and journals
 * it by digest, and a too-large one is refused with the limit named.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const ECHO_LAST_USER =
  'export default function echo(messages) { const user = messages.filter((m) => m.role === "user").at(-1); return { text: user.content + " images=" + (user.images ?? []).length }; }\n';
const TEMPLATE = "---\ndescription: Fix an issue\n---\nFix issue $1 in $2. Everything: $ARGUMENTS\n";
const sha256 = (text: string | Buffer) => createHash("sha256").update(text).digest("hex");

function png(width: number, height: number, size = 64): Buffer {
  const bytes = Buffer.alloc(size);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write("IHDR", 12, "ascii");
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return bytes;
}

describe("commands and images through the CLI", () => {
  let env: NodeJS.ProcessEnv;
  let configDir: string;
  let script: string;

  beforeAll(async () => {
    configDir = await tempDir("harness-config-");
    await writeFile(join(configDir, "config.json"), "{}\n");
    env = { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") };
    script = join(await tempDir("harness-script-"), "echo.mjs");
    await writeFile(script, ECHO_LAST_USER);
  });
  const harness = (args: string[]) => finished(startHarness(args, { env }));

  it("a user's template expands with its arguments; the journal has command.expanded with the digest", async () => {
    await mkdir(join(configDir, "commands"), { recursive: true });
    await writeFile(join(configDir, "commands/fix.md"), TEMPLATE);
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const result = await harness([
      ...["run", "--script", script, "--workspace", workspace, "--session", "s1", "--json"],
      '/fix 42 "the parser"',
    ]);
    expectExit(result, 0);
    const expanded = 'Fix issue 42 in the parser. Everything: 42 "the parser"\n';
    expect(jsonSummary(result).answer).toBe(`${expanded} images=0`);
    const records = await readJournal(workspace, "s1");
    expect(ofType(records, "command.expanded").map((r) => r.data)).toEqual([
      { name: "fix", digest: sha256(TEMPLATE), source: "user" },
    ]);
    expect(ofType(records, "user.input").map((r) => r.data.text)).toEqual([expanded]);
  });

  it("a project's template is refused until approved, then expands", async () => {
    const workspace = await workspaceWith({ ".agents/commands/ship.md": "Ship version $1.\n" });
    const refused = await harness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--json",
      "/ship 2.0",
    ]);
    expectExit(refused, 64);
    expect(refused.stderr).toContain(
      "/ship (.agents/commands/ship.md) is not loaded: you have not approved it",
    );
    expectExit(await harness(["plugins", "approve", "ship", "--workspace", workspace]), 0);
    const ran = await harness([
      ...["run", "--script", script, "--workspace", workspace, "--session", "s2", "--json"],
      "/ship 2.0",
    ]);
    expectExit(ran, 0);
    const records = await readJournal(workspace, "s2");
    expect(ofType(records, "command.expanded").map((r) => [r.data.name, r.data.source])).toEqual([
      ["ship", "project"],
    ]);
    expect(ofType(records, "user.input").map((r) => r.data.text)).toEqual(["Ship version 2.0.\n"]);
  });

  it("run --image attaches the image to the first message, stored as an artifact by digest", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const image = png(320, 200);
    const file = join(await tempDir("harness-img-"), "shot.png");
    await writeFile(file, image);
    const result = await harness([
      ...["run", "--script", script, "--workspace", workspace, "--session", "s3", "--json"],
      ...["--image", file, "what is in the picture?"],
    ]);
    expectExit(result, 0);
    expect(jsonSummary(result).answer).toBe("what is in the picture? images=1");
    const [input] = ofType(await readJournal(workspace, "s3"), "user.input");
    const digest = sha256(image);
    expect(input?.data.images).toEqual([
      { artifact: digest, sha256: digest, media_type: "image/png", bytes: 64, width: 320, height: 200 },
    ]);
    const stored = join(sessionDir(workspace, "s3"), "artifacts");
    const all = readdirSync(stored, { recursive: true }).map(String);
    expect(all.some((name) => name.endsWith(digest))).toBe(true);
  });

  it("run --image refuses an image over the pixel limit, naming it, and records nothing", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const file = join(await tempDir("harness-img-"), "huge.png");
    await writeFile(file, png(9000, 10));
    const result = await harness([
      ...["run", "--script", script, "--workspace", workspace, "--session", "s4", "--json"],
      ...["--image", file, "look"],
    ]);
    expectExit(result, 64);
    expect(result.stderr).toContain("9000x10 pixels, over the limit of 8000 pixels a side");
    expect(existsSync(join(sessionDir(workspace, "s4"), "events.jsonl"))).toBe(false);
  });
});
