import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ensureBuilt, REPO_ROOT } from "../e2e/helpers.js";

/**
 * npm runs a dependency's install script only when package.json's `allowScripts` allows it, and
 * warns on every `npm ci` about each one it does not cover. Every dependency with an install
 * script is decided here: allowed when harness needs what it builds (better-sqlite3's native
 * module, esbuild's binary, the test PostgreSQL's symlinks on each platform), denied when it does not (tree-sitter-bash's native binding: harness
 * loads only the grammar's .wasm, which ships in the package).
 */

const lockSchema = z.object({
  packages: z.record(z.string(), z.object({ hasInstallScript: z.boolean().optional() }).loose()),
});
const manifestSchema = z.object({ allowScripts: z.record(z.string(), z.boolean()) });

beforeAll(() => ensureBuilt());

const readJson = (name: string): unknown => JSON.parse(readFileSync(join(REPO_ROOT, name), "utf8"));

describe("dependency install scripts", () => {
  it("every locked dependency with an install script is allowed or denied in allowScripts", () => {
    const lock = lockSchema.parse(readJson("package-lock.json"));
    const { allowScripts } = manifestSchema.parse(readJson("package.json"));
    const withScripts = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== "" && entry.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length));
    expect(withScripts).toContain("tree-sitter-bash");
    expect(withScripts.filter((name) => !(name in allowScripts))).toEqual([]);
    expect(allowScripts["tree-sitter-bash"]).toBe(false);
  });

  it("the shell parser works without tree-sitter-bash's native binding: only its .wasm is loaded", () => {
    // A fresh process in which loading any native module of tree-sitter-bash fails loudly.
    const script = `
      const original = process.dlopen;
      process.dlopen = function (module, filename, ...rest) {
        if (String(filename).includes("tree-sitter-bash")) throw new Error("native binding loaded: " + filename);
        return original.call(this, module, filename, ...rest);
      };
      const { loadShellParser, splitCommand } = await import(${JSON.stringify(join(REPO_ROOT, "dist/src/policy/shell-command.js"))});
      await loadShellParser();
      process.stdout.write(JSON.stringify(splitCommand("npm test && git   push").parts.map((p) => p.text)));
    `;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: REPO_ROOT,
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual(["npm test", "git push"]);
  });
});
