import { cliLayer } from "../src/policy/cli-flags.js";
import { evaluate } from "../src/policy/evaluation.js";
import { buildPolicy } from "../src/policy/permissions.js";
import { loadShellParser, splitCommand } from "../src/policy/shell-command.js";
import { type BenchRow, median, round } from "./stats.js";

const TYPICAL = "npm test -- --watch && git status";
const COMPOUND =
  "FOO=1 timeout 60 npm run build && (cd web && npm test) | tee out.log; echo $(git rev-parse HEAD)";

/** Microseconds per call of `fn`, median of several rounds. */
function perCall(fn: () => void, count = 2000, rounds = 7): number {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const began = performance.now();
    for (let i = 0; i < count; i++) fn();
    samples.push(((performance.now() - began) * 1000) / count);
  }
  return median(samples);
}

/** What deciding a shell call by its parsed commands costs: the parser load, a parse, a decision. */
export async function benchPolicy(): Promise<BenchRow[]> {
  const loadStarted = performance.now();
  await loadShellParser();
  const load = performance.now() - loadStarted;
  const policy = buildPolicy([
    cliLayer({ allow: ["shell(npm *)", "shell(git status*)"], deny: ["shell(git push*)"] }),
  ]);
  const decide = (command: string) => () =>
    evaluate(policy, {
      tool: "shell",
      effect: "process_execution",
      args: { command },
      subjectKind: "command",
    });
  return [
    { name: "shell parser load (once per process)", value: round(load, 1), unit: "ms" },
    {
      name: "split a typical command",
      value: round(perCall(() => splitCommand(TYPICAL))),
      unit: "µs",
      note: TYPICAL,
    },
    { name: "split a compound command", value: round(perCall(() => splitCommand(COMPOUND))), unit: "µs" },
    { name: "decide a typical shell call", value: round(perCall(decide(TYPICAL))), unit: "µs" },
    { name: "decide a compound shell call", value: round(perCall(decide(COMPOUND))), unit: "µs" },
  ];
}
