import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
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
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/*
 * A repository with 50 nested AGENTS.md files: every one the agent's calls reach is pinned into
 * the conversation (and again after every compaction). Past a total budget (64 KiB) a file is no
 * longer sent whole: the model is told its path and SHA-256 and that it can read it. Which files
 * fit is decided in a fixed order (outer directories first, then by path).
 */

const FILES = 50;
const FILE_BYTES = 3000;
const BUDGET = 64 * 1024;
const dir = (i: number) => `d${String(i).padStart(2, "0")}`;
const body = (i: number) => {
  const head = `Rules for ${dir(i)}: BODY-${dir(i)}-MARK. `;
  return head + "x".repeat(FILE_BYTES - head.length);
};

/**
 * The scripted model: first it reads one file in every directory (so each AGENTS.md is loaded),
 * then it answers with every user message it was sent, so the answer is what a real model read.
 */
const SCRIPT = `export default function model(messages, step) {
  if (step === 0) {
    const calls = [];
    for (let i = 0; i < ${FILES}; i++) {
      const d = "d" + String(i).padStart(2, "0");
      calls.push({ id: "r" + i, name: "read_file", arguments: { path: d + "/x.txt" } });
    }
    return { text: "reading", calls };
  }
  return { text: JSON.stringify(messages.filter((m) => m.role === "user").map((m) => m.content)) };
}
`;

describe("nested AGENTS.md files past the pinned-instructions budget", { timeout: 120_000 }, () => {
  it("the first ones in order are sent whole, the rest by path and digest, as journaled", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < FILES; i++) {
      files[`${dir(i)}/AGENTS.md`] = body(i);
      files[`${dir(i)}/x.txt`] = `${i}\n`;
    }
    const workspace = await workspaceWith(files);
    const configDir = await tempDir("harness-config-");
    await writeFile(join(configDir, "config.json"), "{}\n");
    const script = join(await tempDir("harness-script-"), "model.mjs");
    await writeFile(script, SCRIPT);
    const result = await finished(
      startHarness(
        [
          "run",
          "--script",
          script,
          "-w",
          workspace,
          "--session",
          "s",
          "--context-window",
          "400000",
          "--json",
          "read everything",
        ],
        {
          env: { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") },
        },
      ),
    );
    expectExit(result, 0);
    const sent = (JSON.parse(String(jsonSummary(result).answer)) as string[]).join("\n");

    const whole = Math.floor(BUDGET / FILE_BYTES);
    for (let i = 0; i < FILES; i++) {
      const path = `${dir(i)}/AGENTS.md`;
      const digest = createHash("sha256").update(body(i)).digest("hex");
      if (i < whole) {
        expect(sent, path).toContain(body(i));
      } else {
        expect(sent, path).not.toContain(`BODY-${dir(i)}-MARK`);
        expect(sent, path).toContain(
          `[harness: ${path} (instructions for files under ${dir(i)}/) is not included`,
        );
        expect(sent, path).toContain(`sha256 ${digest}`);
      }
    }

    const [nested] = ofType(await readJournal(workspace, "s"), "instructions.loaded").filter(
      (record) => record.data.trigger === "nested",
    );
    const recorded = nested?.data.files as { path: string; sha256: string; text: string; listed?: boolean }[];
    expect(recorded.map((file) => file.path)).toEqual(
      Array.from({ length: FILES }, (_, i) => `${dir(i)}/AGENTS.md`),
    );
    expect(recorded.filter((file) => file.listed !== true)).toHaveLength(whole);
    const pinned = recorded
      .filter((file) => file.listed !== true)
      .reduce((total, file) => total + Buffer.byteLength(file.text), 0);
    expect(pinned).toBeLessThanOrEqual(BUDGET);
    for (const [i, file] of recorded.entries()) {
      expect(file.sha256).toBe(createHash("sha256").update(body(i)).digest("hex"));
      // What the journal says was sent is what was sent.
      expect(sent).toContain(file.text);
    }
  });
});
