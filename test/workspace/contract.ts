import { readdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { WorkspaceError, type WorkspaceErrorCode } from "../../src/workspace/fs.js";
import { versionOf } from "../../src/workspace/version.js";
import { ACCEPTED_PATHS, REJECTED_PATHS } from "./boundary-cases.js";
import type { FsFactory, FsFixture } from "./fixtures.js";
import { text, utf8 } from "./fixtures.js";

export async function expectWorkspaceError(
  promise: Promise<unknown>,
  code: WorkspaceErrorCode,
): Promise<WorkspaceError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WorkspaceError);
  expect((error as WorkspaceError).code).toBe(code);
  return error as WorkspaceError;
}

/** Every chunk a readChunks iteration yields, each copied as it arrives (a chunk may be reused). */
export async function readAllChunks(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const all: Uint8Array[] = [];
  for await (const chunk of chunks) all.push(chunk.slice());
  return all;
}

function joined(chunks: readonly Uint8Array[]): Buffer {
  return Buffer.concat(chunks);
}

/** Descriptors this process holds open (Linux), to see that a read closed what it opened. */
function openDescriptors(): number | undefined {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return undefined;
  }
}

const INITIAL = {
  "a.txt": "alpha\n",
  "B.txt": "bravo\n",
  "src/app.ts": "export const app = 1;\n",
  "src/util/strings.ts": "export {};\n",
  "src/.hidden.ts": "hidden\n",
  ".gitignore": "dist/\n",
  ".harness/journal.jsonl": "{}\n",
  "nested/deep/file.md": "# deep\n",
};

/** The WorkspaceFs contract: every implementation must pass it unchanged. */
export function runWorkspaceFsContract(name: string, factory: FsFactory): void {
  describe(`WorkspaceFs contract: ${name}`, () => {
    let fixture: FsFixture | undefined;
    const open = async (files: Record<string, string | Uint8Array> = INITIAL): Promise<FsFixture> => {
      fixture = await factory(files);
      return fixture;
    };
    afterEach(async () => {
      await fixture?.dispose();
      fixture = undefined;
    });

    describe("boundary", () => {
      it.each(REJECTED_PATHS)(
        "refuses %j with %s on every operation and changes nothing",
        async (input, code) => {
          const { fs, files } = await open();
          const before = await files();
          await expectWorkspaceError(fs.resolve(input), code);
          await expectWorkspaceError(fs.stat(input), code);
          await expectWorkspaceError(fs.readFile(input), code);
          await expectWorkspaceError(readAllChunks(fs.readChunks(input)), code);
          await expectWorkspaceError(fs.readDir(input), code);
          await expectWorkspaceError(fs.writeFileAtomic(input, utf8("pwned")), code);
          // (For "" the child would be "/child.txt", an absolute path.)
          if (input !== "")
            await expectWorkspaceError(fs.writeFileAtomic(`${input}/child.txt`, utf8("pwned")), code);
          await expectWorkspaceError(fs.glob("*", { cwd: input }), code);
          expect(await files()).toEqual(before);
        },
      );

      it.each(ACCEPTED_PATHS)("accepts %j as %j", async (input, normalized) => {
        const { fs } = await open();
        expect(await fs.resolve(input)).toBe(normalized);
      });

      it("names only the relative path in error messages", async () => {
        const { fs } = await open();
        const error = await expectWorkspaceError(fs.readFile("missing/file.txt"), "NOT_FOUND");
        expect(error.path).toBe("missing/file.txt");
        expect(error.message).toContain("missing/file.txt");
        expect(error.message).not.toMatch(/\/tmp|harness-ws-/);
      });
    });

    describe("stat and readFile", () => {
      it("reports files, directories and absence", async () => {
        const { fs } = await open();
        expect(await fs.stat("a.txt")).toMatchObject({ kind: "file", size: 6 });
        expect(await fs.stat("src")).toMatchObject({ kind: "directory" });
        expect(await fs.stat(".")).toMatchObject({ kind: "directory" });
        expect(await fs.stat("missing.txt")).toBeUndefined();
        expect(await fs.stat("a.txt/below")).toBeUndefined();
      });

      it("reads exact bytes and maps failures", async () => {
        const bytes = new Uint8Array([0xef, 0xbb, 0xbf, 0x00, 0xff, 0x0d, 0x0a]);
        const { fs } = await open({ ...INITIAL, "bin.dat": bytes });
        expect(await fs.readFile("bin.dat")).toEqual(bytes);
        expect(text(await fs.readFile("./src//app.ts"))).toBe("export const app = 1;\n");
        await expectWorkspaceError(fs.readFile("missing.txt"), "NOT_FOUND");
        await expectWorkspaceError(fs.readFile("src"), "IS_DIRECTORY");
        await expectWorkspaceError(fs.readFile("."), "IS_DIRECTORY");
        await expectWorkspaceError(fs.readFile("a.txt/below"), "NOT_A_DIRECTORY");
      });

      it("returns a copy that callers cannot use to change the file", async () => {
        const { fs } = await open();
        const first = await fs.readFile("a.txt");
        first[0] = 0x41;
        expect(text(await fs.readFile("a.txt"))).toBe("alpha\n");
      });
    });

    describe("readChunks", () => {
      // Larger than any read an implementation makes in one go for a small file.
      const big = new Uint8Array(200_003).map((_, i) => (i * 7 + (i >> 9)) & 0xff);

      it("yields the file's bytes in order, in chunks of at most chunkBytes", async () => {
        const { fs } = await open({ ...INITIAL, "big.bin": big });
        const chunks = await readAllChunks(fs.readChunks("big.bin", { chunkBytes: 65_536 }));
        expect(joined(chunks).length).toBe(big.length);
        expect(joined(chunks).equals(big)).toBe(true);
        expect(chunks.length).toBe(4);
        for (const chunk of chunks) {
          expect(chunk.byteLength).toBeGreaterThan(0);
          expect(chunk.byteLength).toBeLessThanOrEqual(65_536);
        }
        const whole = await readAllChunks(fs.readChunks("./big.bin"));
        expect(whole.length).toBe(1);
        expect(versionOf(joined(whole))).toBe(versionOf(big));
        expect(text(joined(await readAllChunks(fs.readChunks("src//app.ts", { chunkBytes: 5 }))))).toBe(
          "export const app = 1;\n",
        );
      });

      it("yields nothing for an empty file and maps failures as readFile does", async () => {
        const { fs } = await open({ ...INITIAL, "empty.txt": "" });
        expect(await readAllChunks(fs.readChunks("empty.txt"))).toEqual([]);
        await expectWorkspaceError(readAllChunks(fs.readChunks("missing.txt")), "NOT_FOUND");
        await expectWorkspaceError(readAllChunks(fs.readChunks("src")), "IS_DIRECTORY");
        await expectWorkspaceError(readAllChunks(fs.readChunks(".")), "IS_DIRECTORY");
        await expectWorkspaceError(readAllChunks(fs.readChunks("a.txt/below")), "NOT_A_DIRECTORY");
        await expect(readAllChunks(fs.readChunks("a.txt", { chunkBytes: 0 }))).rejects.toThrow(RangeError);
      });

      it("gives chunks a reader can change without changing the file", async () => {
        const { fs } = await open();
        for await (const chunk of fs.readChunks("a.txt")) chunk.fill(0x41);
        expect(text(await fs.readFile("a.txt"))).toBe("alpha\n");
      });

      it("closes the file when the reader stops early", async () => {
        const { fs } = await open({ ...INITIAL, "big.bin": big });
        const before = openDescriptors();
        for await (const chunk of fs.readChunks("big.bin", { chunkBytes: 1000 })) {
          expect(chunk[0]).toBe(big[0]);
          break;
        }
        expect(openDescriptors()).toBe(before);
        await fs.writeFileAtomic("big.bin", utf8("replaced"));
        expect(text(joined(await readAllChunks(fs.readChunks("big.bin"))))).toBe("replaced");
      });
    });

    describe("writeFileAtomic", () => {
      it("creates parents and leaves exactly the new file behind", async () => {
        const { fs, files } = await open();
        const before = await files();
        await fs.writeFileAtomic("new/dir/deep.txt", utf8("你好"));
        expect(await files()).toEqual({ ...before, "new/dir/deep.txt": utf8("你好") });
        expect(await fs.stat("new/dir")).toMatchObject({ kind: "directory" });
      });

      it("replaces content and keeps the previous file's mode", async () => {
        const { fs, files, setMode } = await open();
        await setMode("a.txt", 0o600);
        await fs.writeFileAtomic("a.txt", utf8("replaced"));
        expect((await files())["a.txt"]).toEqual(utf8("replaced"));
        expect((await fs.stat("a.txt"))?.mode).toBe(0o600);
        await setMode("a.txt", 0o755);
        // Based on the version just written: the propose-mode overlay refuses a second unversioned
        // write to a file it already holds a proposal for (it would silently drop the first).
        await fs.writeFileAtomic("a.txt", utf8("again"), { expectedVersion: versionOf(utf8("replaced")) });
        expect((await fs.stat("a.txt"))?.mode).toBe(0o755);
      });

      it("commits only when the expected version still matches", async () => {
        const { fs, files } = await open();
        const before = await files();
        const current = versionOf(utf8("alpha\n"));
        await expectWorkspaceError(
          fs.writeFileAtomic("a.txt", utf8("x"), { expectedVersion: versionOf(utf8("other")) }),
          "STALE_VERSION",
        );
        await expectWorkspaceError(
          fs.writeFileAtomic("a.txt", utf8("x"), { expectedVersion: null }),
          "STALE_VERSION",
        );
        await expectWorkspaceError(
          fs.writeFileAtomic("absent.txt", utf8("x"), { expectedVersion: current }),
          "STALE_VERSION",
        );
        expect(await files()).toEqual(before);
        await fs.writeFileAtomic("a.txt", utf8("x"), { expectedVersion: current });
        await fs.writeFileAtomic("fresh.txt", utf8("y"), { expectedVersion: null });
        expect(await files()).toEqual({ ...before, "a.txt": utf8("x"), "fresh.txt": utf8("y") });
      });

      it("refuses directories and paths below files", async () => {
        const { fs, files } = await open();
        const before = await files();
        await expectWorkspaceError(fs.writeFileAtomic("src", utf8("x")), "IS_DIRECTORY");
        await expectWorkspaceError(fs.writeFileAtomic(".", utf8("x")), "IS_DIRECTORY");
        await expectWorkspaceError(fs.writeFileAtomic("a.txt/child.txt", utf8("x")), "NOT_A_DIRECTORY");
        await expectWorkspaceError(
          fs.writeFileAtomic("a.txt/deeper/child.txt", utf8("x")),
          "NOT_A_DIRECTORY",
        );
        expect(await files()).toEqual(before);
      });
    });

    describe("protected paths", () => {
      const PROTECTED = {
        ".git/config": "[core]\n",
        ".git/hooks/pre-commit": "#!/bin/sh\n",
        "vendor/lib/.git/config": "[core]\n",
        "harness.config.json": "{}\n",
        "ok.txt": "ok\n",
      };

      it.each([
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/hooks/post-checkout",
        ".git/info/attributes",
        ".git",
        ".GIT/config",
        ".Git/HOOKS/pre-push",
        "vendor/lib/.git/config",
        "sub/.git",
        "new/.git/config",
        "harness.config.json",
        "HARNESS.CONFIG.JSON",
        "./.git/config",
      ])("refuses to write %j with PROTECTED_PATH and changes nothing", async (input) => {
        const { fs, files } = await open(PROTECTED);
        const before = await files();
        const error = await expectWorkspaceError(fs.writeFileAtomic(input, utf8("pwned")), "PROTECTED_PATH");
        expect(error.message).toContain("is protected");
        expect(await files()).toEqual(before);
      });

      it("keeps protected files readable, and a nested harness.config.json or .github writable", async () => {
        const { fs, files } = await open(PROTECTED);
        expect(text(await fs.readFile(".git/config"))).toBe("[core]\n");
        expect(text(await fs.readFile("vendor/lib/.git/config"))).toBe("[core]\n");
        await fs.writeFileAtomic("sub/harness.config.json", utf8("{}"));
        await fs.writeFileAtomic(".github/workflows/ci.yml", utf8("on: push\n"));
        await fs.writeFileAtomic(".gitignore", utf8("x\n"));
        expect((await files())["sub/harness.config.json"]).toEqual(utf8("{}"));
      });
    });

    describe("readDir", () => {
      it("lists sorted entries and hides .harness at the root", async () => {
        const { fs } = await open();
        expect(await fs.readDir(".")).toEqual([
          { name: ".gitignore", kind: "file" },
          { name: "B.txt", kind: "file" },
          { name: "a.txt", kind: "file" },
          { name: "nested", kind: "directory" },
          { name: "src", kind: "directory" },
        ]);
        expect(await fs.readDir("src")).toEqual([
          { name: ".hidden.ts", kind: "file" },
          { name: "app.ts", kind: "file" },
          { name: "util", kind: "directory" },
        ]);
      });

      it("maps failures", async () => {
        const { fs } = await open();
        await expectWorkspaceError(fs.readDir("missing"), "NOT_FOUND");
        await expectWorkspaceError(fs.readDir("a.txt"), "NOT_A_DIRECTORY");
      });
    });

    describe("glob", () => {
      it("returns files only, dot-files included, sorted by code unit, never .harness", async () => {
        const { fs } = await open();
        expect(await fs.glob("**")).toEqual([
          ".gitignore",
          "B.txt",
          "a.txt",
          "nested/deep/file.md",
          "src/.hidden.ts",
          "src/app.ts",
          "src/util/strings.ts",
        ]);
        expect(await fs.glob("**/*.ts")).toEqual(["src/.hidden.ts", "src/app.ts", "src/util/strings.ts"]);
        expect(await fs.glob("*.txt")).toEqual(["B.txt", "a.txt"]);
      });

      it("orders a.txt before a/b.txt ('.' < '/')", async () => {
        const { fs } = await open({ "a/b.txt": "", "a.txt": "", "a-z.txt": "" });
        expect(await fs.glob("**/*.txt")).toEqual(["a-z.txt", "a.txt", "a/b.txt"]);
      });

      it("matches relative to cwd but returns root-relative paths", async () => {
        const { fs } = await open();
        expect(await fs.glob("*.ts", { cwd: "src" })).toEqual(["src/.hidden.ts", "src/app.ts"]);
        expect(await fs.glob("**/*.ts", { cwd: "./src/util/" })).toEqual(["src/util/strings.ts"]);
        expect(await fs.glob("src/*.{ts,md}")).toEqual(["src/.hidden.ts", "src/app.ts"]);
        expect(await fs.glob("./src/app.ts")).toEqual(["src/app.ts"]);
      });

      it("does not expand a bare directory name", async () => {
        const { fs } = await open();
        expect(await fs.glob("src")).toEqual([]);
        expect(await fs.glob("nothing/**")).toEqual([]);
      });

      it.each([
        ["../*", "PATH_ESCAPE"],
        ["src/../../x", "PATH_ESCAPE"],
        ["/etc/*", "PATH_ESCAPE"],
        ["C:/x/*", "PATH_ESCAPE"],
        ["\\*", "PATH_ESCAPE"],
        ["src\\*.ts", "INVALID_PATH"],
        ["!*.ts", "INVALID_PATH"],
        ["", "INVALID_PATH"],
        [".", "INVALID_PATH"],
        ["a\0*", "INVALID_PATH"],
        [".harness/**", "RESERVED_PATH"],
        ["./.harness/*", "RESERVED_PATH"],
      ] as const)("refuses the pattern %j with %s", async (pattern, code) => {
        const { fs } = await open();
        await expectWorkspaceError(fs.glob(pattern), code);
      });

      it("maps a bad cwd", async () => {
        const { fs } = await open();
        await expectWorkspaceError(fs.glob("*", { cwd: "missing" }), "NOT_FOUND");
        await expectWorkspaceError(fs.glob("*", { cwd: "a.txt" }), "NOT_A_DIRECTORY");
        await expectWorkspaceError(fs.glob("*", { cwd: ".harness" }), "RESERVED_PATH");
      });
    });
  });
}
