// Lines where bash evaluates text as code out of sight of the split are unknowable (they ask);
// the common shapes that only do arithmetic on numbers the line wrote stay decidable. The
// end-to-end attack is test/e2e-shell/hidden-evaluation.test.ts.
/* biome-ignore-all lint/suspicious/noTemplateCurlyInString: shell text, not templates */
import { beforeAll, describe, expect, it } from "vitest";
import { loadShellParser, splitCommand } from "../../src/policy/shell-command.js";

beforeAll(loadShellParser);

const unknown = (command: string) => splitCommand(command).parts.some((part) => part.unknown !== undefined);

describe("hidden evaluation", () => {
  it.each([
    "declare 'a[$(touch p)]=1'; npm test",
    "local 'a[`touch p`]'",
    "unset 'a[$(touch p)]'",
    'unset "$w"',
    "test -v 'a[$(touch p)]'",
    '[ -v "$x" ]',
    "[[ -v $x ]]",
    'printf -v "$x" y',
    'read "$x" < f',
    "x='$(touch p)'; echo ${x@P}",
    "echo ${!x}",
    "x='a[$(touch p)]'; echo $((x))",
    "x=$(cat f); [[ $x -eq 1 ]]",
    "read n < f; echo ${s:n}",
    "for f in *; do echo $((f)); done",
    "x=`cat f`; echo ${a[x]}",
    "let 'y=x'",
    "echo $(( $(cat f) ))",
    "n=3; read n; echo $((n))",
    "declare -n r=PATH; r=.; npm test",
    "read PATH <<< /tmp; npm test",
    "printf -v PATH %s .",
    "mapfile -t LD_PRELOAD < f",
  ])("%s is unknown", (command) => {
    expect(unknown(command)).toBe(true);
  });

  it.each([
    "npm test",
    "for ((i=0; i<3; i++)); do echo $i; done",
    "n=3; echo $((n+1))",
    "echo ${#a[@]} ${!p*} ${!a[@]}",
    '[ "$(cat f)" = x ] && echo ok',
    "echo ${x:-default} ${x:=y}",
    "read -r line < f; echo $line",
    "echo $((RANDOM % 6)) $((16#ff))",
    "test -f x && echo '$(not run)'",
    "printf '%s' PATH; read -r line < f",
    "declare -a arr=(1 2)",
  ])("%s stays decidable", (command) => {
    expect(unknown(command)).toBe(false);
  });
});
