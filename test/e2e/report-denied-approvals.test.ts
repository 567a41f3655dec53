import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unifiedDiff } from "../../src/shared/unified-diff.js";
import { sharedChromium, watch } from "../viewer/browser.js";
import {
  ensureBuilt,
  harness,
  jsonScript,
  readJournal,
  removeTempDirs,
  sessionIds,
  tempDir,
  workspaceWith,
} from "./helpers.js";

const browser = sharedChromium();
beforeAll(ensureBuilt);
afterAll(removeTempDirs);

/**
 * A run off a terminal (`ask` means deny): a write the rules allow, then an edit that asks and is
 * denied. The journal holds approval.requested/decided for the edit before its tool.result.
 */
async function runWithDeniedEdit() {
  const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
  const script = await jsonScript([
    {
      text: "Writing the plan.",
      calls: [{ id: "w1", name: "write_file", arguments: { path: "plan.txt", content: "one\r\ntwo" } }],
      usage: { input_tokens: 100, output_tokens: 20 },
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
      usage: { input_tokens: 150, output_tokens: 30 },
    },
    { text: "done", usage: { input_tokens: 200, output_tokens: 5 } },
  ]);
  const run = await harness([
    "run",
    "--script",
    script,
    "--workspace",
    workspace,
    "--write",
    "ask",
    "--allow",
    "write_file(plan.txt)",
    "plan and finalise",
  ]);
  expect(run.code, run.stderr).toBe(0);
  const [session] = sessionIds(workspace);
  return { workspace, session: session! };
}

describe("harness report: denied edits, approvals, totals", () => {
  it("draws the denied edit as denied with no applied diff, puts its approval before it, and totals the journal", async () => {
    const { workspace, session } = await runWithDeniedEdit();
    const records = await readJournal(workspace, session);
    const out = join(await tempDir(), "report.html");
    const result = await harness(["report", session, "-w", workspace, "-o", out]);
    expect(result.code, result.stderr).toBe(0);

    const page = await browser().newPage();
    const log = watch(page);
    await page.goto(pathToFileURL(out).href);
    await page.locator("#timeline li").first().waitFor();

    // The denied edit: marked denied, its request struck through, and no applied-diff markup.
    const edit = page.locator(".item.call", { has: page.locator(".title", { hasText: "edit_file" }) });
    await expect.poll(() => edit.getAttribute("class")).toContain("denied");
    expect(await edit.locator(".denied-marker").textContent()).toBe("denied: not applied (USER_DENIED)");
    expect(await edit.locator(".diff").count()).toBe(0);
    expect(await edit.locator(".status").textContent()).toBe("denied");

    // The allowed write: its applied diff is the bytes the journal recorded, which are the one diff's.
    const write = page.locator(".item.call", { has: page.locator(".title", { hasText: "write_file" }) });
    const applied = write.locator("pre.diff.applied .line");
    const shown = (await applied.allTextContents()).join("\n");
    expect(`${shown}\n`).toBe(unifiedDiff("plan.txt", null, "one\r\ntwo"));
    expect(await page.locator("pre.diff.applied").count()).toBe(1);

    // The approval for e1 comes before e1's card in the page, as it did before the call ran.
    const items = page.locator("#timeline > li");
    const rows = await items.evaluateAll((lis) =>
      lis.map((li) => ({
        approvalFor: li.getAttribute("data-approval-for"),
        call: li.classList.contains("call") ? li.querySelector(".title")?.textContent : null,
        text: li.textContent ?? "",
      })),
    );
    const approval = rows.findIndex((row) => row.approvalFor === "e1");
    const order = {
      approval,
      call: rows.findIndex((row) => row.call === "edit_file"),
      text: rows[approval]?.text,
    };
    expect(order.approval).toBeGreaterThanOrEqual(0);
    expect(order.approval).toBeLessThan(order.call);
    expect(order.text).toContain("Approval declined by policy");

    // Totals, each counted from the journal here.
    const results = records.filter((r) => r.type === "tool.result");
    const data = (r: (typeof records)[number]) => r.data as Record<string, unknown>;
    const usage = records
      .filter((r) => r.type === "model.reply")
      .map((r) => (data(r).usage ?? {}) as { input_tokens?: number; output_tokens?: number });
    const expected = {
      calls: String(results.length),
      edits: String(
        results.filter(
          (r) => data(r).status === "ok" && ["edit_file", "write_file"].includes(String(data(r).name)),
        ).length,
      ),
      denied: String(results.filter((r) => data(r).status === "denied").length),
      approvals: String(records.filter((r) => r.type === "approval.decided").length),
      tokens: `${usage.reduce((n, u) => n + (u.input_tokens ?? 0), 0)} in / ${usage.reduce((n, u) => n + (u.output_tokens ?? 0), 0)} out`,
    };
    expect(expected).toEqual({
      calls: "2",
      edits: "1",
      denied: "1",
      approvals: "1",
      tokens: "450 in / 55 out",
    });
    const total = (key: string) => page.locator(`#totals [data-total="${key}"] .value`).textContent();
    for (const [key, value] of Object.entries(expected)) expect(await total(key), key).toBe(value);
    const ms = Date.parse(records.at(-1)!.time) - Date.parse(records[0]!.time);
    const duration = ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
    expect(await total("duration")).toBe(duration);

    expect(log.pageErrors).toEqual([]);
    expect(log.consoleErrors).toEqual([]);
    await page.close();
  }, 120_000);
});
