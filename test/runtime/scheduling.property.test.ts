// Property: scheduling one reply's file calls in parallel batches is indistinguishable, in its
// effects and per-call outcomes, from running the same calls one per reply, in call order.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { run, tempWorkspace } from "../support/session.js";
import { results } from "./helpers.js";

const PATHS = ["a.txt", "b.txt", "c.txt"] as const;
const INITIAL = { "a.txt": "xy\nyx\n", "b.txt": "xxy\n" };
const text = (minLength: number) =>
  fc.string({ unit: fc.constantFrom("x", "y", "\n"), minLength, maxLength: 5 });
const path = fc.constantFrom(...PATHS);

const call = fc.oneof(
  { weight: 3, arbitrary: path.map((p) => ({ name: "read_file", arguments: { path: p } })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(path, text(0))
      .map(([p, content]) => ({ name: "write_file", arguments: { path: p, content } })),
  },
  {
    weight: 3,
    arbitrary: fc.tuple(path, text(1), text(0), fc.boolean()).map(([p, oldText, newText, all]) => ({
      name: "edit_file",
      arguments: { path: p, old_text: oldText, new_text: newText, ...(all ? { replace_all: true } : {}) },
    })),
  },
);

interface Observed {
  outcomes: string[];
  files: (string | null)[];
}

async function execute(
  calls: readonly { name: string; arguments: Record<string, unknown> }[],
  mode: "one reply" | "one per reply",
): Promise<Observed> {
  const ws = await tempWorkspace(INITIAL);
  try {
    const identified = calls.map((c, i) => ({ id: `c${i}`, ...c }));
    const turns =
      mode === "one reply"
        ? [{ calls: identified }, { text: "done" }]
        : [...identified.map((c) => ({ calls: [c] })), { text: "done" }];
    const summary = await run(ws, {
      turns,
      limits: { poolSize: mode === "one reply" ? 8 : 1, maxModelRequests: 100 },
    });
    expect(summary.status).toBe("unverified");
    const all = await results(ws);
    const files = await Promise.all(
      PATHS.map((p) => readFile(join(ws.root, p), "utf8").catch(() => null as string | null)),
    );
    return { outcomes: all.map((r) => `${r.call_id}:${r.status}:${r.error_type ?? ""}`), files };
  } finally {
    await ws.cleanup();
  }
}

describe("batched scheduling equals sequential execution", () => {
  it("gives the same final files and per-call outcomes", async () => {
    let appliedChanges = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 8 }), async (calls) => {
        const batched = await execute(calls, "one reply");
        const sequential = await execute(calls, "one per reply");
        expect(batched).toEqual(sequential);
        appliedChanges += batched.outcomes.filter(
          (o, i) => o.endsWith(":ok:") && calls[i]?.name !== "read_file",
        ).length;
      }),
      { numRuns: 25 },
    );
    // Not vacuous: the generated replies really changed files.
    expect(appliedChanges).toBeGreaterThan(0);
  }, 120_000);
});
