import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type EntryName, type EntrySurface, packageSurface, ROOT, surfaceChanges } from "./surface.js";

/**
 * The names the package's `"."` and `"./engine"` entries export, against the committed
 * schema/package-surface.json: a name that leaves or is renamed breaks a caller's import, so a
 * change to the surface is made on purpose, by regenerating the file and committing it.
 */
const COMMITTED = join(ROOT, "schema/package-surface.json");
const UPDATE = "HARNESS_UPDATE_SURFACE=1 npx vitest run test/package/surface.test.ts";

type Surface = Record<EntryName, EntrySurface>;

const text = (surface: Surface) => `${JSON.stringify(surface, null, 2)}\n`;

describe("the package surface", () => {
  it("is the committed schema/package-surface.json", async () => {
    const current = await packageSurface();
    if (process.env.HARNESS_UPDATE_SURFACE === "1") writeFileSync(COMMITTED, text(current));
    const committed = (existsSync(COMMITTED) ? JSON.parse(readFileSync(COMMITTED, "utf8")) : {}) as Surface;
    const changes = surfaceChanges(committed, current);
    const message =
      `the names exported by "harness" or "harness/engine" changed:\n  ${changes.join("\n  ")}\n` +
      "A removed or renamed name breaks callers. If the change is on purpose, run " +
      `\`${UPDATE}\` and commit schema/package-surface.json.`;
    expect(changes, message).toEqual([]);
    expect(
      readFileSync(COMMITTED, "utf8"),
      `schema/package-surface.json is not formatted: run \`${UPDATE}\``,
    ).toBe(text(current));
  }, 120_000);

  it("names the surface package.json maps to each entry", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      exports: Record<string, unknown>;
    };
    expect(pkg.exports["."]).toBe("./dist/src/index.js");
    expect(pkg.exports["./engine"]).toEqual({
      types: "./dist/src/engine-entry.d.ts",
      default: "./dist/src/engine-entry.js",
    });
  });

  it("reports a planted removal as breaking, before any addition", () => {
    const before: Surface = {
      ".": { values: ["createSession", "openSession"], types: ["SessionHandle"] },
      "./engine": { values: ["Engine"], types: [] },
    };
    const after: Surface = {
      ".": { values: ["createSession", "startSession"], types: ["SessionHandle"] },
      "./engine": { values: ["Engine"], types: ["EngineOptions"] },
    };
    expect(surfaceChanges(before, after)).toEqual([
      'removed from "." values: openSession',
      'added to "." values: startSession',
      'added to "./engine" types: EngineOptions',
    ]);
  });
});
