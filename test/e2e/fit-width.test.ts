import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeReply } from "../e2e-providers/wire.js";
import { BIN, childEnv, ensureBuilt, finished, removeTempDirs, tempDir, workspaceWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const LONG = `${"a long answer that goes on ".repeat(12)}end`;

function cli(args: string[], env: NodeJS.ProcessEnv) {
  return finished(spawn(process.execPath, [BIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] }));
}

/** Characters as a person sees them: colour codes take no columns. */
function widest(text: string): number {
  const plain = text.replace(/\u001b\[[0-9;]*m/g, "");
  return Math.max(...plain.split("\n").map((line) => [...line].length));
}

describe("human output fits the terminal's width (COLUMNS when not a terminal)", () => {
  it("inspect cuts long lines with an ellipsis; --json is unchanged", async () => {
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const wire = writeReply("chat", { kind: "text", text: LONG, usage: { input: 10, output: 5 } });
        res.writeHead(wire.status, wire.headers);
        res.end("body" in wire ? wire.body : "");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const config = join(await tempDir(), "config.json");
      await writeFile(
        config,
        JSON.stringify({
          models: {
            local: { provider: "openai-compatible", model: "m", base_url: `http://127.0.0.1:${port}/v1` },
          },
          default_profile: "local",
        }),
      );
      const workspace = await workspaceWith({});
      const base: NodeJS.ProcessEnv = { ...childEnv(), HARNESS_CONFIG: config };
      delete base.COLUMNS;
      const narrow: NodeJS.ProcessEnv = { ...base, COLUMNS: "60", FORCE_COLOR: "1" };
      delete narrow.NO_COLOR;
      const run = await cli(["run", "--workspace", workspace, "--session", "wide", `goal ${LONG}`], base);
      expect(run.code, run.stderr).toBe(0);

      const whole = await cli(["inspect", "wide", "--workspace", workspace], base);
      expect(whole.code, whole.stderr).toBe(0);
      expect(widest(whole.stdout)).toBeGreaterThan(60);

      const fitted = await cli(["inspect", "wide", "--workspace", workspace], narrow);
      expect(fitted.code, fitted.stderr).toBe(0);
      expect(widest(fitted.stdout)).toBeLessThanOrEqual(60);
      expect(fitted.stdout).toContain("…");
      expect(fitted.stdout).toContain("\u001b["); // colour kept, only not counted
      expect(fitted.stdout.split("\n")).toHaveLength(whole.stdout.split("\n").length);

      const json = await cli(["inspect", "wide", "--workspace", workspace, "--json"], base);
      const narrowJson = await cli(["inspect", "wide", "--workspace", workspace, "--json"], narrow);
      expect(narrowJson.stdout).toBe(json.stdout);
      expect(narrowJson.stdout).toContain(LONG);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("eval's table and progress lines fit; its --json report does not change", async () => {
    const env = { ...childEnv(), COLUMNS: "60", HARNESS_CONFIG: join(await tempDir(), "none.json") };
    const table = await cli(["eval", "faults"], env);
    expect(table.code, table.stderr).toBe(0);
    expect(widest(table.stdout)).toBeLessThanOrEqual(60);
    expect(widest(table.stderr)).toBeLessThanOrEqual(60);
    expect(`${table.stdout}${table.stderr}`).toContain("…");
    const json = await cli(["eval", "faults", "--json"], env);
    expect(json.code, json.stderr).toBe(0);
    expect(widest(json.stdout)).toBeGreaterThan(60);
    expect(json.stdout).not.toContain("…");
  });
});
