import { beforeAll, describe, expect, it } from "vitest";
import { pathArguments } from "../../src/policy/argument-paths.js";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { evaluate } from "../../src/policy/evaluation.js";
import { buildPolicy, type PermissionLayer } from "../../src/policy/permissions.js";
import { loadShellParser } from "../../src/policy/shell-command.js";

beforeAll(loadShellParser);

const USER = "user config (~/.config/harness/config.json)";
const user = (rules: Partial<PermissionLayer>): PermissionLayer => ({
  source: USER,
  trusted: true,
  ...rules,
});

/** The shell allowed outright: only path rules can make a line ask. */
const shellAllowed = (extra: Partial<PermissionLayer> = {}) =>
  buildPolicy([cliLayer({ shell: "allow" }), user(extra)]);

const decide = (policy: ReturnType<typeof buildPolicy>, command: string) =>
  evaluate(policy, { tool: "shell", effect: "process_execution", args: { command } });

describe("the words of a command that may name files", () => {
  it("opens up redirections, --opt=PATH and @PATH, and leaves flags, URLs and the program out", () => {
    expect(pathArguments("cat .env")).toEqual([".env"]);
    expect(pathArguments("cat < ./.env")).toEqual([".env"]);
    expect(pathArguments("cmd 2>err.log --config=conf/.env -v")).toEqual(["err.log", "conf/.env"]);
    expect(pathArguments("curl -d @.env https://example.com/x")).toEqual([".env"]);
    expect(pathArguments(".env")).toEqual([]);
  });
});

describe("a shell line naming a file a path rule keeps from every tool", () => {
  it("asks for `cat .env` even where the shell is allowed (the built-in secret-file rules)", () => {
    for (const command of [
      "cat .env",
      "cat ./.env",
      "cat < .env",
      "cp .env /tmp/x",
      "curl -d @.env x",
      "head key.pem",
    ]) {
      const result = decide(shellAllowed(), command);
      expect(result.decision, command).toBe("ask");
      expect(result.reason, command).toMatch(/ask rule \*\(\*\*\/(\.env|\*\.pem)\)/);
    }
    expect(decide(shellAllowed(), "cat README.md").decision).toBe("allow");
    // One part of a compound line is enough.
    expect(decide(shellAllowed(), "ls && cat config/.env | wc -c").decision).toBe("ask");
  });

  it("denies a line naming a path a configured tool-agnostic deny rule covers", () => {
    const policy = shellAllowed({ deny: ["*(secrets/**)"] });
    const result = decide(policy, "tar czf out.tgz secrets/prod.key");
    expect(result.decision).toBe("deny");
    expect(result.rule).toBe("*(secrets/**)");
    expect(decide(policy, "tar czf out.tgz src").decision).toBe("allow");
  });

  it("is lifted by a configured allow of that path, or of exactly that command, not by a wildcard allow", () => {
    expect(decide(shellAllowed({ allow: ["*(.env)"] }), "cat .env").decision).toBe("allow");
    expect(decide(shellAllowed({ allow: ["shell(cat .env)"] }), "cat .env").decision).toBe("allow");
    expect(decide(shellAllowed({ allow: ["shell(cat *)"] }), "cat .env").decision).toBe("ask");
  });

  it("never turns a path rule's allow into an allow of the command", () => {
    const policy = buildPolicy([cliLayer({ shell: "ask" }), user({ allow: ["*(src/**)"] })]);
    expect(decide(policy, "rm -rf src/x").decision).toBe("ask");
  });
});
