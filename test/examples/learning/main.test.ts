import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, REPO_ROOT } from "../../e2e/helpers.js";

beforeAll(() => ensureBuilt(), 240_000);

/** `npm run learning:harness -- ARGS` without npm: the script line runs exactly this. */
function learning(...args: string[]) {
  const result = spawnSync(
    process.execPath,
    [join(REPO_ROOT, "dist/src/examples/learning/main.js"), ...args],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    },
  );
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("npm run learning:harness", () => {
  it("workflow prints needs_review, the preview and an unchanged repository", () => {
    const result = learning("workflow");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("status: needs_review");
    expect(result.stdout).toContain("+export const sum = (a: number, b: number) => a + b;");
    expect(result.stdout).toContain("repository unchanged by the agent: true");
  });

  it("boundaries --json reports each case with its own reason", () => {
    const result = learning("boundaries", "--json");
    expect(result.code).toBe(0);
    const { cases } = JSON.parse(result.stdout) as {
      cases: {
        name: string;
        rejection: { code: string } | null;
        model_requests: number;
        as_expected: boolean;
      }[];
    };
    expect(cases.map((c) => [c.name, c.rejection?.code, c.model_requests, c.as_expected])).toEqual([
      ["scope-read", "POLICY_DENIED", 2, true],
      ["unknown-action", "UNKNOWN_TOOL", 2, true],
      ["unread-version", "NOT_READ", 3, true],
      ["stale-version", "STALE_VERSION", 3, true],
      ["step-budget", "budget_exhausted", 2, true],
      ["context-budget", "context_exhausted", 0, true],
    ]);
  });

  it("rejects an unknown lesson with a usage error", () => {
    const result = learning("everything");
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("workflow|boundaries");
  });
});
