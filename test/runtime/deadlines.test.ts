import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Deadlines } from "../../src/runtime/deadlines.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Deadlines", () => {
  it("fires each deadline once, in time order, and never a cancelled one", async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const began = performance.now();
    const at: Record<string, number> = {};
    const mark = (name: string) => () => {
      fired.push(name);
      at[name] = performance.now() - began;
    };
    deadlines.add(60, mark("late"));
    const cancel = deadlines.add(20, mark("cancelled"));
    deadlines.add(10, mark("early"));
    cancel();
    await sleep(400);
    expect(fired).toEqual(["early", "late"]);
    expect(at.early).toBeGreaterThanOrEqual(9);
    expect(at.late).toBeGreaterThanOrEqual(59);
    // An entry added after the timer went idle is armed again.
    deadlines.add(5, mark("again"));
    await sleep(200);
    expect(fired).toEqual(["early", "late", "again"]);
  });

  it("holds the process open only while something waits", () => {
    // The built module (npm test builds first), since a child node cannot load TypeScript.
    const module = path.resolve("dist/src/runtime/deadlines.js");
    // A cancelled 60 s deadline must not keep node running; a waiting 50 ms one must.
    const script = `
      const { Deadlines } = await import(${JSON.stringify(module)});
      const d = new Deadlines();
      d.add(60_000, () => console.log("fired late"))();
      d.add(50, () => console.log("fired"));
    `;
    const began = Date.now();
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(run.stdout.trim()).toBe("fired");
    expect(Date.now() - began).toBeLessThan(15_000);
  });
});
