import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseMcpServer } from "../../src/mcp/config.js";
import { serverNamedFiles } from "../../src/mcp/named-files.js";

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("the files a stdio server definition names", () => {
  it("a package directory argument names its package.json, the entry its main picks and its index.js", async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), "harness-named-")));
    await mkdir(join(root, "server/lib"), { recursive: true });
    await writeFile(join(root, "server/package.json"), JSON.stringify({ main: "lib/start" }));
    await writeFile(join(root, "server/lib/start.js"), "");
    await writeFile(join(root, "server/index.js"), "");
    await writeFile(join(root, "server/lib/helper.js"), "");
    await writeFile(join(root, "tool.mjs"), "");
    const definition = parseMcpServer(
      "s",
      { command: "node", args: ["./server", "tool.mjs", "--flag", "missing.js"] },
      "config.json",
    );
    expect(serverNamedFiles([definition], root)).toEqual(
      [
        join(root, "server/index.js"),
        join(root, "server/lib/start.js"),
        join(root, "server/package.json"),
        join(root, "tool.mjs"),
      ].sort(),
    );
  });

  it("an option's =value and the words of a code-loading variable's value name files too; other variables are data", async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), "harness-named-")));
    for (const name of ["srv.py", "boot.js", "start.py", "pre.js", "server.log"])
      await writeFile(join(root, name), "");
    const definition = parseMcpServer(
      "s",
      {
        command: "python3",
        args: ["--script=./srv.py", "-q"],
        env: {
          NODE_OPTIONS: "--require ./boot.js --import=./pre.js",
          PYTHONSTARTUP: "start.py",
          N: "3",
          LOG: "server.log",
        },
      },
      "config.json",
    );
    expect(serverNamedFiles([definition], root)).toEqual(
      [join(root, "boot.js"), join(root, "pre.js"), join(root, "srv.py"), join(root, "start.py")].sort(),
    );
  });
});
