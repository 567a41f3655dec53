import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { evaluate } from "../../src/policy/evaluation.js";
import type { PermissionSettings } from "../../src/policy/permissions.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import { loadShellParser } from "../../src/policy/shell-command.js";

/*
 * bash is the oracle: `evilprog` is a program the rules deny, installed in a bin directory on
 * PATH, that leaves a marker when it runs. Every generated line is run by real bash and decided
 * by the policy; whenever bash ran evilprog, the policy must not have said allow. The families
 * are the ways a line was found running a denied program while the rules allowed it: a pattern
 * that becomes the command after a wrapper, wrapper options with a separate value, programs
 * that run their arguments, bash running text as code, environment that changes what runs.
 * (A new name for the program, `ln -s`/`cp`, cannot be decided by parsing: the sandbox's stub
 * covers it, see test/sandbox/denied-programs.test.ts and test/e2e-shell/denied-programs.test.ts.)
 */

let dir: string;
let bin: string;
let marker: string;

beforeAll(async () => {
  await loadShellParser();
  dir = mkdtempSync(join(tmpdir(), "harness-deny-"));
  bin = join(dir, "bin");
  marker = join(dir, "evilprog-ran");
  mkdirSync(bin);
  // It fails, so that `watch -e` and the like stop after running it once.
  writeFileSync(join(bin, "evilprog"), `#!/bin/sh\n: > ${marker}\nexit 1\n`, { mode: 0o755 });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const RULES: PermissionSettings[] = [
  { allow: ["shell(*)"], deny: ["shell(evilprog*)"] },
  { shell: "allow", deny: ["shell(evilprog*)"] },
];

function decide(command: string, flags: PermissionSettings) {
  return evaluate(buildPolicy([cliLayer(flags)]), {
    tool: "shell",
    effect: "process_execution",
    args: { command },
    subjectKind: "command",
  }).decision;
}

/** Whether bash, run on `command` in a fresh directory, ran evilprog. */
function bashRuns(command: string): boolean {
  rmSync(marker, { force: true });
  const work = mkdtempSync(join(dir, "w-"));
  try {
    spawnSync("/bin/bash", ["-c", command], {
      cwd: work,
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: work },
      timeout: 3000,
      stdio: "ignore",
    });
  } finally {
    killLeftInside(work);
    rmSync(work, { recursive: true, force: true });
  }
  return existsSync(marker);
}

/**
 * The timeout kills bash, not what it left running (a `flock` waiting on a lock a nested one
 * holds): end every process this line started, found by its working directory.
 */
function killLeftInside(work: string): void {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(work)) process.kill(Number(entry), "SIGKILL");
    } catch {
      // Gone already, or not ours to read.
    }
  }
}

const P = "evilprog";
/**
 * Spellings of the program that bash turns into evilprog by matching file names: in the working
 * directory (where the line made a file of that name first) or in a path.
 */
const patterns = () =>
  fc
    .constantFrom("evilpro?", "evilpr[o]g", "evil*", "e*prog", "[e]vilprog", "BIN/evilpro[g]", "BIN/e*")
    .map((pattern) =>
      pattern.startsWith("BIN/") ? pattern.replace("BIN", bin) : `touch evilprog; ${pattern}`,
    );
/** Wrappers harness sees through, with options as users write them. */
const wrapper = fc.constantFrom(
  "env",
  "env -i PATH=$PATH",
  "command",
  "nohup",
  "exec",
  "time -p",
  "nice -n 1",
  "nice -5",
  "setsid -w",
  "timeout 5",
  "timeout -s KILL 5",
  "stdbuf -o0",
  "flock -n lk",
  "ionice -c 3",
  "taskset 1",
  "taskset -c 0",
  "chrt -o 0",
  "sudo",
);
/** Options with a separate value, long and abbreviated, that an incomplete table would misread. */
const longOptions = fc.constantFrom(
  "timeout --signal KILL 5",
  "timeout --kill-after 1 5",
  "timeout --sig KILL 5",
  "timeout --k 1 5",
  "env --chdir /",
  "env --unset X",
  "env --ch /",
  "env -u X",
  "nice --adjustment 1",
  "nice --adj 1",
  "stdbuf --output 0",
  "stdbuf --out 0",
  "flock --timeout 1 lk",
  "flock --wait 1 lk",
  "flock -w 1 lk",
  "flock -n -E 3 lk",
  "ionice --class 3",
  "ionice --classdata 1 -c 2",
  "chrt --other 0",
  "chrt -T 1 -o 0",
  "taskset --cpu-list 0",
  "sudo --user root",
  "sudo -u root",
  "setsid --wait",
  "echo x | xargs --max-args 1",
  "echo x | xargs --max-a 1",
  "echo x | xargs -n 1",
  "echo x | xargs -L 1",
  "echo x | xargs --delimiter x",
  "echo x | xargs -d x",
  "echo x | xargs -I Y",
  "echo x | xargs -P 1",
  "echo x | xargs -s 100",
  "echo x | xargs -E z",
  "echo x | xargs --arg-file /dev/null",
  "time -o /dev/null",
  "time -f %e",
);
/** Programs that run their arguments as a command or as shell code. */
const runners = fc.constantFrom(
  `flock lk ${P}`,
  `flock lk -c ${P}`,
  `flock -n lk -c '${P} x'`,
  `ionice ${P}`,
  `taskset 0x1 ${P}`,
  `chrt -o 0 ${P}`,
  `chrt -b 0 ${P}`,
  `prlimit ${P}`,
  `prlimit --nofile=100 ${P}`,
  `prlimit -n 100 ${P}`,
  `setpriv ${P}`,
  `setpriv --reuid 0 ${P}`,
  `script -qc ${P} /dev/null`,
  `script -q -c '${P}' /dev/null`,
  `unshare ${P}`,
  `unshare -U ${P}`,
  `echo x | xargs ${P}`,
  `echo ${P} | xargs env`,
  `echo ${P} | xargs -I{} env {}`,
  `echo ${P} | xargs -I{} sh -c '{}'`,
  `echo ${P} | xargs sh -c`,
  `echo ${P} | xargs timeout 5`,
  `find / -maxdepth 0 -exec ${P} \\;`,
  `find BIN/ -name ${P} -exec {} \\;`,
  `find BIN/ -name ${P} -exec env {} \\;`,
  `find / -maxdepth 0 -exec sh -c '${P}' \\;`,
  `watch -x -e -n 0.1 ${P}`,
  `watch -e -n 0.1 ${P}`,
  `parallel ${P} ::: 1`,
  `su root -c ${P}`,
  `su -c ${P}`,
  `runuser -u root ${P}`,
  `runuser -u root -- ${P}`,
  `stdbuf -o0 ${P}`,
  `timeout 5 ${P}`,
  `nohup ${P}`,
  `nice ${P}`,
  `setsid -w ${P}`,
  `busybox sh -c ${P}`,
  `busybox env ${P}`,
  `sh -c ${P}`,
  `bash -c -x ${P}`,
  `bash -xc ${P}`,
  `bash +x -c ${P}`,
  `bash -o errexit -c ${P}`,
  `bash --norc -c ${P}`,
  `bash --rcfile /dev/null -c ${P}`,
  `echo ${P} | sh`,
  `echo ${P} | bash -s`,
  `echo ${P} > s.sh; sh s.sh`,
  `echo ${P} > s.sh; bash s.sh`,
  `dash -c ${P}`,
  `env -- ${P}`,
  `env - PATH=BIN/ ${P}`,
  `command -p ${P}`,
  `exec -a x ${P}`,
  `builtin exec ${P}`,
  `coproc ${P}`,
  `time ${P}`,
  `nice -n 1 -- ${P}`,
);
/** bash running text as code. */
const textAsCode = fc.constantFrom(
  `mapfile -C ${P} -c 1 a <<< x`,
  `mapfile -tC ${P} -c 1 a <<< x`,
  `readarray -C '${P} #' -c 1 a <<< x`,
  `builtin mapfile -C ${P} -c 1 a <<< x`,
  `PS4='$(${P})'; set -x; true`,
  `PS4='\`${P}\`' bash -xc true`,
  `PS4='$(${P})' bash -c 'set -x; true'`,
  `export PS4='$(${P})'; bash -xc true`,
  `read PS4 <<< '$(${P})'; set -x; true`,
  `printf -v PS4 '$(${P})'; set -x; true`,
  `trap ${P} EXIT`,
  `trap '${P}' DEBUG; true`,
  `trap -- '${P}' EXIT`,
  `eval ${P}`,
  `eval '${P}'`,
  `eval "${P} x"`,
  `eval e'vilprog'`,
  `echo ${P} > s.sh; source s.sh`,
  `echo ${P} > s.sh; . ./s.sh`,
  `echo ${P} > s.sh; source ./s.sh x`,
  `compgen -C ${P} x`,
  `compgen -C '${P}' -- x`,
  `complete -C ${P} x; compgen -C ${P} y`,
);
/** Environment that changes what a name runs, set where a plain assignment does not show it. */
const environment = fc.constantFrom(
  `env 'BASH_FUNC_true%%=() { ${P}; }' bash -c true`,
  `env BASH_FUNC_true%%='() { ${P}; }' bash -c true`,
  `export 'BASH_FUNC_true%%=() { ${P}; }'; bash -c true`,
  `declare -x 'BASH_FUNC_ls%%=() { ${P}; }'; bash -c ls`,
  `env -i 'BASH_FUNC_ls%%=() { ${P}; }' /bin/bash -c ls`,
  `echo ${P} > s.sh; export 'BASH_ENV=s.sh'; bash -c true`,
  `echo ${P} > s.sh; export "BASH_ENV=./s.sh"; bash -c true`,
  `echo ${P} > s.sh; declare -x 'BASH_ENV=s.sh'; bash -c true`,
  `echo ${P} > s.sh; BASH_ENV=s.sh bash -c true`,
  `echo ${P} > s.sh; env BASH_ENV=s.sh bash -c true`,
  `echo ${P} > s.sh; env ENV=s.sh sh -i -c true`,
  `echo ${P} > s.sh; ENV=s.sh sh -i -c true`,
  `mkdir d; ln -s BIN/${P} d/x; export 'PATH=d'; x`,
  `mkdir d; ln -s BIN/${P} d/x; export "PATH=$PWD/d"; x`,
  `mkdir d; ln -s BIN/${P} d/x; env PATH=d x`,
  `mkdir d; ln -s BIN/${P} d/x; declare -x 'PATH=d:/bin'; x`,
  `echo BIN/${P} > ~/.bashrc; bash -i -c true`,
  `echo BIN/${P} > ~/.bash_profile; bash -lc true`,
  `echo BIN/${P} > ~/.profile; sh -l -c true`,
  `echo ${P} > rc; bash --rcfile rc -i -c true`,
  `SHELL=BIN/${P} flock lk -c true`,
  `export 'SHELL=BIN/${P}'; flock lk -c true`,
);

/** A line of one family, placed among harmless commands. */
const withBin = (line: string) => line.replaceAll("BIN/", `${bin}/`);
const familyLine = fc
  .tuple(
    fc.constantFrom("", "true; ", "echo hi && ", "cd . ; "),
    fc.oneof(
      fc
        .tuple(wrapper, patterns())
        .map(([w, p]) => (p.startsWith("touch ") ? p.replace("; ", `; ${w} `) : `${w} ${p}`)),
      fc.tuple(longOptions, fc.constantFrom(P, "BIN/evilpr[o]g")).map(([w, p]) => `${w} ${p}`),
      runners,
      textAsCode,
      environment,
      fc.tuple(wrapper, runners).map(([w, r]) => `${w} ${r}`),
    ),
    fc.constantFrom("", "; true", " && echo done"),
  )
  .map(([before, line, after]) => withBin(`${before}${line}${after}`));

describe("property: whenever bash runs a denied program, the rules do not allow the line", () => {
  it("generated lines of every family", () => {
    let ran = 0;
    fc.assert(
      fc.property(familyLine, (command) => {
        if (!bashRuns(command)) return;
        ran++;
        for (const flags of RULES) {
          expect({ command, flags, decision: decide(command, flags) }).not.toEqual({
            command,
            flags,
            decision: "allow",
          });
        }
      }),
      { numRuns: 200 },
    );
    // The oracle is only worth something if bash really ran the program on many of the lines.
    expect(ran).toBeGreaterThan(60);
  }, 300_000);

  it.each([
    ["a pattern after a wrapper", "touch evilprog; env evilpro?"],
    ["a pattern in a path after a wrapper", "command BIN/evilpr[o]g"],
    ["a long option with a separate value", "timeout --signal KILL 5 evilprog"],
    ["an abbreviated long option", "echo x | xargs --max-a 1 evilprog"],
    ["flock", "flock -n lk evilprog"],
    ["flock -c", "flock -n lk -c evilprog"],
    ["script -c", "script -qc evilprog /dev/null"],
    ["xargs filling the command", "echo evilprog | xargs env"],
    ["find -exec {}", "find BIN/ -name evilprog -exec {} \\;"],
    ["mapfile -C", "mapfile -C evilprog -c 1 a <<< x"],
    ["PS4 with set -x", "PS4='$(evilprog)'; set -x; true"],
    ["source of a file the line wrote", "echo evilprog > s.sh; . ./s.sh"],
    ["a shell reading its input", "echo evilprog | sh"],
    ["env with a function", "env 'BASH_FUNC_true%%=() { evilprog; }' bash -c true"],
    ["BASH_ENV in a quoted declaration", "echo evilprog > s.sh; declare -x 'BASH_ENV=s.sh'; bash -c true"],
    ["a login shell's startup file", "echo BIN/evilprog > ~/.bash_profile; bash -lc true"],
  ])("%s: bash runs the program and the rules do not allow it", (_family, template) => {
    const command = withBin(template);
    expect({ command, ran: bashRuns(command) }).toEqual({ command, ran: true });
    for (const flags of RULES)
      expect({ command, decision: decide(command, flags) }).not.toEqual({ command, decision: "allow" });
  });

  it("ordinary lines stay allowed", () => {
    const flags = RULES[1] as PermissionSettings;
    for (const command of [
      "timeout 5 npm test",
      "nice -n 5 make",
      "env FOO=1 node x.js",
      "flock /tmp/l npm test",
      "xargs -n1 rm < list",
      "find . -name '*.o' -exec rm {} \\;",
      "bash -c 'npm test'",
      "export FOO='a b'; ls",
      "declare -x 'FOO=1'",
      "mapfile -t lines < f",
      "ls *.ts",
      "time -p make",
      "bash script.sh",
    ]) {
      expect({ command, decision: decide(command, { shell: "allow" }) }).toEqual({
        command,
        decision: "allow",
      });
      if (command !== "bash script.sh")
        expect({ command, decision: decide(command, flags) }).toEqual({ command, decision: "allow" });
    }
    // A script runs code the line does not show: under a deny rule it asks.
    expect(decide("bash script.sh", flags)).toBe("ask");
  });
});
