import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream, type SessionNotification } from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, childEnv, ensureBuilt, jsonScript, removeTempDirs, tempDir, workspaceWith } from "./helpers.js";

/*
 * Command templates through `harness acp`, driven by the official SDK's client: the loaded
 * templates are offered as available commands, `/NAME args` expands one as every door does
 * (the expanded text is the recorded input, command.expanded before it), and a project's
 * template that is not approved is answered with why, never sent to the model as typed.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness acp: command templates", () => {
  it("offers the loaded templates, expands one, and refuses an unapproved one", async () => {
    const configDir = await tempDir("harness-config-");
    await writeFile(join(configDir, "config.json"), "{}\n");
    await mkdir(join(configDir, "commands"));
    await writeFile(
      join(configDir, "commands", "ship.md"),
      "---\ndescription: Ship a version.\n---\nShip version $1 to $2.\n",
    );
    const ws = await workspaceWith({ ".agents/commands/deploy.md": "Deploy everything.\n" });
    const script = await jsonScript([{ text: "shipped" }]);
    const child = spawn(process.execPath, [BIN, "acp", "--script", script], {
      env: { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const updates: SessionNotification[] = [];
    const connection = client({ name: "test-editor" })
      .onNotification("session/update", ({ params }) => {
        updates.push(params);
      })
      .connect(
        ndJsonStream(
          Writable.toWeb(child.stdin as Writable) as WritableStream<Uint8Array>,
          Readable.toWeb(child.stdout as Readable) as ReadableStream<Uint8Array>,
        ),
      );
    try {
      await connection.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
      const { sessionId } = await connection.agent.request("session/new", { cwd: ws, mcpServers: [] });
      const said = () =>
        updates
          .filter((n) => n.update.sessionUpdate === "agent_message_chunk")
          .map((n) => (n.update as { content: { text?: string } }).content.text ?? "")
          .join("");

      const refused = await connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "/deploy now" }],
      });
      expect(refused.stopReason).toBe("end_turn");
      expect(said()).toContain("harness plugins approve deploy");

      await connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "/ship 2.0 production" }],
      });
      expect(said()).toContain("shipped");
      const records = readFileSync(join(ws, ".harness/sessions", sessionId, "events.jsonl"), "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> });
      const inputs = records.filter((r) => r.type === "user.input").map((r) => r.data.text);
      expect(inputs).toEqual(["Ship version 2.0 to production.\n"]);
      const expanded = records.filter((r) => r.type === "command.expanded");
      expect(expanded.map((r) => [r.data.name, r.data.source])).toEqual([["ship", "user"]]);
      expect(expanded[0]!.data.digest).toMatch(/^[0-9a-f]{64}$/);

      const offered = updates.find((n) => n.update.sessionUpdate === "available_commands_update")?.update as {
        availableCommands: { name: string; description: string }[];
      };
      const names = offered.availableCommands.map((command) => command.name);
      expect(names).toContain("ship");
      expect(names).not.toContain("deploy");
      expect(offered.availableCommands.find((c) => c.name === "ship")?.description).toBe("Ship a version.");
    } finally {
      connection.close();
      child.stdin?.end();
      if (child.exitCode === null && child.signalCode === null)
        await new Promise<void>((resolve) => child.once("close", () => resolve()));
    }
  }, 120_000);
});
