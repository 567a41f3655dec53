import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedChromium, watch } from "../viewer/browser.js";
import {
  ensureBuilt,
  harness,
  journalFile,
  jsonScript,
  readJournal,
  removeTempDirs,
  sessionIds,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/** Markup and script a hostile goal or tool output might carry; the page must show it as text. */
const IMG = "<img src=x onerror=\"document.title='pwned-img'\">";
const CLOSE = "</script><script>document.title='pwned-script'</script>";

const browser = sharedChromium();
beforeAll(ensureBuilt);
afterAll(removeTempDirs);

/** A finished session: read and write a file, run a shell command whose output is hostile, edit, answer. */
async function recordedSession(): Promise<{ workspace: string; session: string }> {
  const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
  const script = await jsonScript([
    {
      text: "Writing the plan and looking around.",
      calls: [
        { id: "r1", name: "read_file", arguments: { path: "notes.txt" } },
        { id: "w1", name: "write_file", arguments: { path: "plan.txt", content: "step one\nstep two\n" } },
        { id: "s1", name: "shell", arguments: { command: `printf '%s\\n' '${IMG}' '${CLOSE}'` } },
      ],
    },
    {
      text: "Finalising.",
      calls: [
        {
          id: "e1",
          name: "edit_file",
          arguments: { path: "notes.txt", old_text: "draft", new_text: "final" },
        },
      ],
    },
    { text: "notes.txt now says final." },
  ]);
  const run = await harness([
    "run",
    "--script",
    script,
    "--workspace",
    workspace,
    "--write",
    "allow",
    "--shell",
    "allow",
    "--accept",
    "grep -q final notes.txt",
    `finalise the notes ${IMG} ${CLOSE}`,
  ]);
  expect(run.code, run.stderr).toBe(0);
  const [session] = sessionIds(workspace);
  return { workspace, session: session! };
}

async function openReport(file: string) {
  const page = await browser().newPage();
  const log = watch(page);
  await page.goto(pathToFileURL(file).href);
  await page.locator("#timeline li").first().waitFor();
  return { page, log };
}

describe("harness report", () => {
  it("writes one static page that renders the session from the file: calls, diffs, shell output, acceptance, outcome", async () => {
    const { workspace, session } = await recordedSession();
    const out = join(await tempDir(), "report.html");
    const result = await harness(["report", session.slice(0, 12), "--workspace", workspace, "-o", out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`session ${session}`);
    expect(result.stdout).toContain("journal verified");

    const html = await readFile(out, "utf8");
    // Nothing to fetch from anywhere: no URL in the page but the data it shows (which has none here).
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).toContain("connect-src 'none'");
    // The hostile strings are inside the JSON data block, escaped so they cannot close it.
    expect(html).not.toContain(CLOSE);
    expect(html.split("</script>").length - 1).toBe(2);

    const { page, log } = await openReport(out);
    const timeline = page.locator("#timeline");
    await expect.poll(() => timeline.textContent()).toContain("Outcome: verified");
    const text = await timeline.textContent();
    expect(text).toContain("write_file");
    // The diffs the results recorded (shared/unified-diff.ts), as the CLI shows them.
    expect(text).toContain("+++ b/plan.txt@@ -0,0 +1,2 @@+step one+step two");
    expect(text).toContain("-status: draft+status: final");
    expect(text).toContain(`$ printf`);
    expect(text).toContain("Acceptance passed");
    expect(text).toContain("grep -q final notes.txt");
    expect(text).toContain("notes.txt now says final.");
    // Every call ended ok, with its duration.
    expect(await page.locator(".item.call .status.ok").count()).toBe(4);
    expect(await page.locator("#verdict").textContent()).toMatch(/^Journal verified: \d+ records/);
    expect(await page.locator("#summary .goal").textContent()).toBe(`finalise the notes ${IMG} ${CLOSE}`);
    // The hostile output is on the page as text, and none of it ran.
    expect(text).toContain(IMG);
    expect(text).toContain(CLOSE);
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.title()).toBe("harness session viewer");
    expect(log.pageErrors).toEqual([]);
    expect(log.consoleErrors).toEqual([]);
    // The file itself is the only thing the page loaded.
    expect(log.requests).toEqual([pathToFileURL(out).href]);
    await page.close();
  }, 90_000);

  it("still writes a page for a tampered journal: the verified records and the verdict, exit 5", async () => {
    const { workspace, session } = await recordedSession();
    const journal = journalFile(workspace, session);
    const records = await readJournal(workspace, session);
    const lines = (await readFile(journal, "utf8")).split("\n");
    const edited = records.findIndex((r) => r.type === "model.reply");
    lines[edited] = lines[edited]!.replace("Writing the plan", "Deleting the plan");
    await writeFile(journal, lines.join("\n"));

    const out = join(await tempDir(), "tampered.html");
    const result = await harness(["report", session, "-w", workspace, "-o", out]);
    expect(result.code).toBe(5);
    expect(result.stdout).toContain("journal did NOT verify");
    expect(result.stderr).toContain("TAMPERED");

    const { page } = await openReport(out);
    const verdict = await page.locator("#verdict").textContent();
    expect(verdict).toContain("Journal verification FAILED");
    expect(verdict).toContain(`only the first ${edited} records are shown`);
    expect(await page.locator("#timeline li").count()).toBeGreaterThan(0);
    expect(await page.locator("#timeline").textContent()).not.toContain("Deleting the plan");
    await page.close();
  }, 90_000);

  it("refuses a directory as -o, and a missing -o, with usage errors that say what to do; --last names the latest session", async () => {
    const { workspace, session } = await recordedSession();
    const dir = await tempDir();
    await mkdir(join(dir, "sub"));
    const onDir = await harness(["report", session, "-w", workspace, "-o", join(dir, "sub")]);
    expect(onDir.code).toBe(64);
    expect(onDir.stderr).toContain("is a directory; name a file");
    const missing = await harness(["report", session, "-w", workspace]);
    expect(missing.code).toBe(64);
    expect(missing.stderr).toContain("-o report.html");
    const last = await harness(["report", "--last", "-w", workspace, "-o", join(dir, "last.html")]);
    expect(last.code, last.stderr).toBe(0);
    expect(last.stdout).toContain(`session ${session}`);
    expect(await readFile(join(dir, "last.html"), "utf8")).toContain('id="harness-data"');
    const help = await harness(["report", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("harness report SESSION [--workspace DIR] -o FILE");
  }, 90_000);
});
