import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PageLog, sharedChromium, watch } from "../viewer/browser.js";
import { loopback } from "./chat-loopback.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  workspaceWith,
} from "./helpers.js";
import { serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

const IMG = "<img src=x onerror=\"document.title='pwned'\">";

const browser = sharedChromium();
beforeAll(ensureBuilt);
afterAll(removeTempDirs);

type Server = Awaited<ReturnType<typeof startHttpServer>>;

/** A page on the server's printed viewer URL (requests anywhere else are aborted and recorded). */
async function openViewer(
  server: Server,
  query = "",
): Promise<{ page: Page; log: PageLog; escaped: string[] }> {
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
  await page.goto(`${server.viewer}${query}`);
  return { page, log, escaped };
}

async function stop(server: Server, page?: Page): Promise<void> {
  await page?.context().close();
  server.child.kill("SIGTERM");
  await server.exited;
}

const listItem = (page: Page, session: string) => page.locator(`#session-list li[data-session="${session}"]`);

describe("the viewer shows every session recorded in the workspaces it serves", () => {
  it("a session recorded by harness run is listed as verified and opens with its timeline; the URL printed at start opens the page", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      {
        text: "writing",
        calls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "hi\n" } }],
      },
      { text: `done ${IMG}` },
    ]);
    const config = await serverConfig();
    const ran = await finished(
      startHarness(
        [
          "run",
          "--script",
          script,
          "--write",
          "allow",
          "--accept",
          "grep -q hi a.txt",
          "--json",
          `write a.txt ${IMG}`,
        ],
        { cwd: workspace, env: serverEnv(config) },
      ),
    );
    expectExit(ran, 0);
    const session = String(jsonSummary(ran).session);
    // No token configured and no --workspace: a token is made for this run, and the directory serve starts in is served.
    const server = await startHttpServer(serverEnv(config), [], { cwd: workspace });
    const { page, log, escaped } = await openViewer(server);
    try {
      expect(server.viewer).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);
      await expect.poll(() => server.stderr()).toContain(`harness serve: viewer: ${server.viewer}\n`);
      const item = listItem(page, session);
      await item.waitFor({ timeout: 20_000 });
      expect(await item.locator(".session-status").textContent()).toBe("verified");
      expect(await item.locator(".goal").textContent()).toBe(`write a.txt ${IMG}`);

      await item.locator("button").click();
      await expect.poll(() => page.locator("#summary .goal").textContent()).toBe(`write a.txt ${IMG}`);
      const timeline = page.locator("#timeline");
      await expect.poll(() => timeline.textContent(), { timeout: 20_000 }).toContain("Outcome: verified");
      expect(await timeline.textContent()).toContain("Acceptance passed");
      expect(await timeline.textContent()).toContain(`done ${IMG}`);
      expect(await page.locator(".item.call .status").textContent()).toBe("ok");
      expect(await page.locator("#session-status").textContent()).toBe("verified");
      await expect.poll(() => page.locator("#verdict").textContent()).toContain("Journal verified");
      expect(new URL(page.url()).searchParams.get("session")).toBe(session);
      expect(await page.locator("img").count()).toBe(0);
      expect(log.pageErrors).toEqual([]);
      expect(log.consoleErrors).toEqual([]);
      expect(escaped).toEqual([]);
    } finally {
      await stop(server, page);
    }
  }, 120_000);

  it("an id that names no session, or is no session id at all, shows an error in the page, not an empty pane", async () => {
    const workspace = await workspaceWith({});
    const server = await startHttpServer(serverEnv(await serverConfig()), ["--workspace", workspace]);
    const { page, log } = await openViewer(server, "&session=20990101-000000-abcdef");
    try {
      const pane = page.locator("#summary .pane-error");
      await expect.poll(() => pane.textContent()).toContain("no session 20990101-000000-abcdef");
      expect(await page.locator("#error").textContent()).toContain("no session 20990101-000000-abcdef");
      expect(await page.locator("#timeline li").count()).toBe(0);
      expect(log.requests.some((url) => url.includes("/events"))).toBe(false);

      await page.goto(`${server.viewer}&session=${encodeURIComponent("../../etc")}`);
      await expect
        .poll(() => pane.textContent())
        .toContain('cannot open session "../../etc": not a valid session id');
      // Refused in the page: the id was never sent anywhere.
      expect(log.requests.filter((url) => url.includes("etc"))).toEqual([
        `${server.viewer}&session=..%2F..%2Fetc`,
      ]);
      expect(await page.locator("#timeline li").count()).toBe(0);
    } finally {
      await stop(server, page);
    }
  }, 60_000);

  it("a session another process is running updates live in the page, and the prompt box may not continue it meanwhile", async () => {
    const workspace = await workspaceWith({});
    // The shell call waits for a file the test writes: the run holds its journal open until then.
    const script = await jsonScript([
      {
        text: "waiting",
        calls: [
          {
            id: "s1",
            name: "shell",
            arguments: { command: "while [ ! -f go ]; do sleep 0.05; done; echo went" },
          },
        ],
      },
      { text: "went on" },
    ]);
    const config = await serverConfig();
    const run = startHarness(
      ["run", "--script", script, "--shell", "allow", "--accept", "test -f go", "wait for go"],
      { cwd: workspace, env: serverEnv(config) },
    );
    const ran = finished(run);
    const server = await startHttpServer(serverEnv(config), ["--workspace", workspace]);
    let page: Page | undefined;
    try {
      // The run has journaled its shell call: from here it is a session growing in another process.
      await expect
        .poll(
          async () => {
            const [id] = sessionIds(workspace);
            return id === undefined ? [] : ofType(await readJournal(workspace, id), "tool.started");
          },
          { timeout: 30_000 },
        )
        .toHaveLength(1);
      const [session = ""] = sessionIds(workspace);
      const opened = await openViewer(server, `&session=${session}`);
      page = opened.page;
      const badge = page.locator(".item.call .status");
      await expect.poll(() => badge.textContent(), { timeout: 20_000 }).toBe("running");
      await expect.poll(() => page?.locator("#session-status").textContent()).toBe("running");
      const item = listItem(page, session);
      await expect.poll(() => item.textContent()).toContain("running in another process");

      await page.locator("#prompt-text").fill("and then?");
      await page.locator("#prompt-send").click();
      await expect
        .poll(() => page?.locator("#error").textContent())
        .toContain(`session ${session} is being run by another process (pid ${run.pid}`);

      await writeFile(join(workspace, "go"), "");
      expectExit(await ran, 0);
      // Nothing reloaded: the records the run appended reached the open page.
      await expect.poll(() => badge.textContent(), { timeout: 20_000 }).toBe("ok");
      await expect.poll(() => page?.locator("#timeline").textContent()).toContain("Outcome: verified");
      expect(await page.locator("#timeline").textContent()).toContain("went on");
      expect(await page.locator("#session-status").textContent()).toBe("verified");
      // The refused prompt never reached the journal.
      const inputs = ofType(await readJournal(workspace, session), "user.input");
      expect(inputs.map((r) => r.data.text)).toEqual(["wait for go"]);
      expect(opened.log.pageErrors).toEqual([]);
    } finally {
      run.kill("SIGKILL");
      await stop(server, page);
    }
  }, 120_000);

  it("the prompt box continues a session harness run recorded and starts a new one: each input is journaled", async () => {
    const model = await loopback();
    const workspace = await workspaceWith({});
    const config = await serverConfig({
      models: {
        small: {
          provider: "openai-compatible",
          model: "alpha-1b",
          base_url: model.baseUrl,
          api_key_env: "LOCAL_KEY",
        },
      },
      default_profile: "small",
    });
    const env = serverEnv(config, { LOCAL_KEY: "k" });
    const ran = await finished(startHarness(["run", "--json", "first words"], { cwd: workspace, env }));
    expectExit(ran, 0);
    const session = String(jsonSummary(ran).session);
    const server = await startHttpServer(env, ["--workspace", workspace]);
    const { page, log } = await openViewer(server, `&session=${session}`);
    try {
      await expect
        .poll(() => page.locator("#timeline").textContent(), { timeout: 20_000 })
        .toContain("alpha-1b says hi");
      await page.locator("#prompt-text").fill("second words");
      await page.locator("#prompt-send").click();
      await expect
        .poll(
          async () => ofType(await readJournal(workspace, session), "user.input").map((r) => r.data.text),
          {
            timeout: 30_000,
          },
        )
        .toEqual(["first words", "second words"]);
      await expect
        .poll(async () => ofType(await readJournal(workspace, session), "run.finished"), { timeout: 30_000 })
        .toHaveLength(2);
      // The page follows the turn it started: its input and the model's answer appear.
      await expect.poll(() => page.locator("#timeline .item.turn").count(), { timeout: 20_000 }).toBe(2);
      expect(await page.locator("#timeline").textContent()).toContain("second words");
      expect(await page.locator("#prompt-text").inputValue()).toBe("");

      // A new session in the served workspace.
      expect(await page.locator("#prompt-workspace").inputValue()).toBe(workspace);
      await page.locator("#prompt-text").fill(`a new goal ${IMG}`);
      await page.locator("#prompt-new").click();
      await expect.poll(() => sessionIds(workspace).length, { timeout: 30_000 }).toBe(2);
      const created = sessionIds(workspace).find((id) => id !== session) ?? "";
      await expect.poll(() => new URL(page.url()).searchParams.get("session")).toBe(created);
      await expect
        .poll(async () => ofType(await readJournal(workspace, created), "run.finished"), { timeout: 30_000 })
        .toHaveLength(1);
      const journal = await readJournal(workspace, created);
      expect(ofType(journal, "user.input").map((r) => r.data.text)).toEqual([`a new goal ${IMG}`]);
      expect(journal[0]?.data.options).toMatchObject({ identity: "default" });
      await expect.poll(() => page.locator("#summary .goal").textContent()).toBe(`a new goal ${IMG}`);
      await expect.poll(() => page.locator("#timeline").textContent()).toContain("alpha-1b says hi");
      expect(await page.locator("img").count()).toBe(0);
      expect(log.pageErrors).toEqual([]);
      expect(model.models).toEqual(["alpha-1b", "alpha-1b", "alpha-1b"]);
    } finally {
      await stop(server, page);
      await model.close();
    }
  }, 150_000);
});
