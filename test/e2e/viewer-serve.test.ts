import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedChromium, watch } from "../viewer/browser.js";
import { ensureBuilt, jsonScript, ofType, readJournal, removeTempDirs, workspaceWith } from "./helpers.js";
import { rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

const TOKEN = "viewer-token-0123456789abcdef";
const IMG = "<img src=x onerror=\"document.title='pwned'\">";

const browser = sharedChromium();
beforeAll(ensureBuilt);
afterAll(removeTempDirs);

describe("the viewer served by harness serve --http", () => {
  it("shows a running session live; Accept clicked in the page lets the write run, journaled as the identity's decision", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      {
        text: `Writing ${IMG}`,
        calls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "alpha\nbeta\n" } }],
      },
      { text: "a.txt is written." },
    ]);
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    const context = await browser().newContext();
    const escaped: string[] = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(`${server.url}/`)) return route.continue();
      escaped.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    const log = watch(page);
    try {
      const started = await rpc(server.url, TOKEN, "session/start", {
        workspace,
        goal: `write a.txt ${IMG}`,
        options: { script, accept: ["grep -q beta a.txt"] },
      });
      const session = started.body.result?.session as string;
      expect(session, JSON.stringify(started.body)).toBeTruthy();

      await page.goto(`${server.url}/?token=${TOKEN}&session=${encodeURIComponent(session)}`);
      const approvals = page.locator("#approvals");
      await approvals.getByRole("button", { name: "Accept", exact: true }).waitFor({ timeout: 20_000 });
      // The request as asked (path and content); a diff is drawn only from what a result records.
      expect(await approvals.locator(".path").textContent()).toBe("a.txt");
      expect(await approvals.locator("pre.new-text").textContent()).toBe("alpha\nbeta\n");
      expect(await page.locator("#session-list").textContent()).toContain(session);
      expect(await page.locator("#summary .goal").textContent()).toBe(`write a.txt ${IMG}`);

      await approvals.getByRole("button", { name: "Accept", exact: true }).click();
      const timeline = page.locator("#timeline");
      await expect.poll(() => timeline.textContent(), { timeout: 20_000 }).toContain("Outcome: verified");
      expect(await timeline.textContent()).toContain("Approval granted by identity:default");
      expect(await timeline.textContent()).toContain("Acceptance passed");
      expect(await approvals.isHidden()).toBe(true);
      await expect.poll(() => page.locator("#verdict").textContent()).toContain("Journal verified");

      const decided = ofType(await readJournal(workspace, session), "approval.decided");
      expect(decided.map((r) => r.data)).toEqual([
        expect.objectContaining({ decision: "allow", scope: "once", by: "identity:default" }),
      ]);
      expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("alpha\nbeta\n");

      // The page ran under the server's CSP header and its own: no violation, nothing injected, nothing sent elsewhere.
      expect(log.consoleErrors).toEqual([]);
      expect(log.pageErrors).toEqual([]);
      expect(await page.locator("img").count()).toBe(0);
      expect(await page.title()).toBe("harness session viewer");
      expect(escaped).toEqual([]);
      expect(log.requests.length).toBeGreaterThan(2);
      expect(log.requests.every((url) => url.startsWith(`${server.url}/`))).toBe(true);
    } finally {
      await context.close();
      server.child.kill("SIGTERM");
      await server.exited;
    }
  }, 90_000);
});
