import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The harness/client example of docs/server.md, as printed. */
function readmeExample(): string {
  const readme = readFileSync(join(root, "docs/server.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Embedding: harness serve and harness/client"));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error("docs/server.md has no harness/client example");
  return block;
}

describe("the documented harness/client example", () => {
  it("is at most a dozen lines and compiles under the project's strict settings", () => {
    const code = readmeExample();
    expect(code).toContain('from "harness/client"');
    expect(code.trim().split("\n").length).toBeLessThanOrEqual(12);
    const dir = mkdtempSync(join(tmpdir(), "harness-readme-"));
    try {
      const file = join(dir, "example.mts");
      writeFileSync(file, code);
      const config = ts.readConfigFile(join(root, "tsconfig.json"), ts.sys.readFile).config as {
        compilerOptions: object;
      };
      const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, root);
      const program = ts.createProgram([file], {
        ...options,
        noEmit: true,
        rootDir: "/",
        typeRoots: [join(root, "node_modules/@types")],
        // The package's own export, as a user's project resolves it, pointed at the source.
        paths: { "harness/client": [join(root, "src/client/index.ts")] },
      });
      const problems = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      expect(problems).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("names the export package.json maps to the client", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      exports: Record<string, { types: string; default: string }>;
    };
    expect(pkg.exports["./client"]).toEqual({
      types: "./dist/src/client/index.d.ts",
      default: "./dist/src/client/index.js",
    });
  });
});
