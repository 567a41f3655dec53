import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedChromium, watch } from "../viewer/browser.js";
import { ensureBuilt, ofType, readJournal, removeTempDirs, tempDir, workspaceWith } from "./helpers.js";
import { rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

/*
 * The live viewer of `harness serve --http` opened after a session's sub-agents ran: their
 * agent/record notifications were sent while no page watched, so the page rebuilds each child's
 * timeline (a grandchild's too) from the child journals the event stream replays after the
 * parent's records. Real server, real headless chromium.
 */

const TOKEN = "viewer-agents-token-0123456789ab";
const IMG = "<img src=x onerror=\"document.title='pwned-child'\">";

const browser = sharedChromium();
beforeAll(ensureBuilt);
afterAll(removeTempDirs);

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

describe("the live viewer opened after sub-agents ran", () => {
  it("shows each child's timeline, rebuilt from its journal, nested in its agent call (a grandchild below it)", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const file = join(await tempDir("harness-viewer-agents-"), "script.json");
    await writeFile(
      file,
      JSON.stringify({
        replies: [
          { text: "", calls: [call("a1", "agent", { task: "look around", label: "worker" })] },
          { text: "parent done" },
        ],
        agents: {
          worker: {
            replies: [
              {
                text: "",
                calls: [
                  call("r1", "read_file", { path: "a.txt" }),
                  call("g1", "agent", { task: "deeper", label: "sub" }),
                ],
              },
              { text: `worker done ${IMG}` },
            ],
            agents: { sub: { replies: [{ text: "sub done" }] } },
          },
        },
      }),
    );
    const server = await startHttpServer(
      serverEnv(await serverConfig(), {
        HARNESS_SERVER_TOKEN: TOKEN,
        HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-"),
      }),
    );
    const page = await browser().newPage();
    const log = watch(page);
    try {
      const started = await rpc(server.url, TOKEN, "session/start", {
        workspace,
        goal: "delegate",
        options: { script: file, agents_depth: 2 },
      });
      const session = started.body.result?.session as string;
      expect(session, JSON.stringify(started.body)).toBeTruthy();
      // The whole tree has run and ended before any page is open.
      await expect
        .poll(async () => ofType(await readJournal(workspace, session), "run.finished").length, {
          timeout: 30_000,
        })
        .toBe(1);
      const worker = await readJournal(workspace, `${session}/worker`);
      expect(ofType(worker, "run.finished").length).toBe(1);

      await page.goto(`${server.url}/?token=${TOKEN}&session=${encodeURIComponent(session)}`);
      const timeline = page.locator("#timeline");
      await expect.poll(() => timeline.textContent(), { timeout: 20_000 }).toContain("parent done");
      const box = page.locator(`#timeline > li section.agent[data-child-session="${session}/worker"]`);
      const records = box.locator(":scope > details.agent-records");
      // The child's own records, from its journal: its reply, its read, its end.
      await expect.poll(() => records.textContent(), { timeout: 20_000 }).toContain(`worker done ${IMG}`);
      expect(await records.textContent()).toContain("look around");
      expect(await records.locator("li.item.call").count()).toBeGreaterThanOrEqual(1);
      // The grandchild, nested in the worker's agent call.
      const sub = box.locator(`section.agent[data-child-session="${session}/worker/sub"]`);
      await expect.poll(() => sub.textContent(), { timeout: 20_000 }).toContain("sub done");
      // Never in the parent's own list: one item per parent record shown, none of the child's.
      const own = await page.locator("#timeline > li").allTextContents();
      expect(own.some((text) => text.includes("look around") && !text.includes("agent worker"))).toBe(false);
      // The child's markup is text.
      expect(await page.locator("img").count()).toBe(0);
      expect(log.pageErrors).toEqual([]);
      expect(log.consoleErrors).toEqual([]);
    } finally {
      await page.close();
      server.child.kill("SIGTERM");
      await server.exited;
    }
  }, 90_000);
});
