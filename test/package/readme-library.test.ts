import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifyJournal } from "../../src/index.js";
import { ROOT } from "./surface.js";

const HEADING = "## Using it as a library";

/** The first ```js block under the README's library heading, exactly as printed. */
async function libraryExample(): Promise<string> {
  const readme = await readFile(join(ROOT, "README.md"), "utf8");
  const at = readme.indexOf(`\n${HEADING}\n`);
  if (at < 0) throw new Error(`README.md has no "${HEADING}" section`);
  const section = readme.slice(at + HEADING.length + 2).split(/\n## /)[0] ?? "";
  const block = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error(`README.md's "${HEADING}" section has no js block`);
  return block;
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/**
 * Run `program` as a caller would: `hello.mjs` in an empty directory where `harness` resolves to
 * this checkout (its package.json exports point at dist/), with a HOME of its own (no config
 * files, no profiles, no keys).
 */
async function runAsCaller(program: string): Promise<{ dir: string; ran: Ran }> {
  if (!existsSync(join(ROOT, "dist/src/index.js"))) throw new Error("dist/ is missing: run `npm run build`");
  const dir = await mkdtemp(join(tmpdir(), "harness-readme-library-"));
  dirs.push(dir);
  const work = join(dir, "work");
  await mkdir(join(work, "node_modules"), { recursive: true });
  await mkdir(join(dir, "home"));
  await symlink(ROOT, join(work, "node_modules/harness"), "dir");
  await writeFile(join(work, "hello.mjs"), program);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: join(dir, "home") };
  // A fresh user: no config file named, no model keys (the journal key stays the tests' throwaway one).
  for (const name of Object.keys(env))
    if (/API_KEY$/.test(name) || name === "HARNESS_CONFIG") delete env[name];
  const ran = await new Promise<Ran>((resolve) => {
    execFile(
      process.execPath,
      ["hello.mjs"],
      { cwd: work, env, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
  return { dir: work, ran };
}

async function journalOf(work: string): Promise<string> {
  const sessions = await readdir(join(work, ".harness/sessions"));
  expect(sessions).toHaveLength(1);
  return join(work, ".harness/sessions", sessions[0] as string, "events.jsonl");
}

describe("the README's library example", () => {
  it("runs offline as printed: hello.txt fixed, `verified` printed, exit 0, the journal ends verified", async () => {
    const program = await libraryExample();
    expect(program).toMatch(/^import \{[^}]*\bcreateSession\b[^}]*\} from "harness";$/m);
    const { dir, ran } = await runAsCaller(program);
    expect(ran, ran.stderr).toMatchObject({ code: 0, stdout: "verified\n" });
    expect(await readFile(join(dir, "hello.txt"), "utf8")).toBe("hello, harness\n");
    const verified = await verifyJournal(await journalOf(dir));
    if (!verified.ok) throw new Error(`the journal does not verify: ${verified.message}`);
    const last = verified.records.at(-1);
    expect(last?.type).toBe("run.finished");
    expect(last?.data).toMatchObject({ status: "verified" });
  }, 90_000);

  it("exits non-zero when the host's check fails (a model that writes the wrong fix)", async () => {
    const program = (await libraryExample()).replace('new_text: "hello,"', 'new_text: "hullo,"');
    expect(program).toContain('new_text: "hullo,"');
    const { dir, ran } = await runAsCaller(program);
    expect(ran.code).toBe(1);
    expect(ran.stdout).not.toBe("verified\n");
    expect(await readFile(join(dir, "hello.txt"), "utf8")).toBe("hullo, harness\n");
  }, 90_000);
});
