import { boundaryLessons, type LessonReport, workflowLesson } from "./lessons.js";
import { renderLesson } from "./report.js";

const USAGE = `Usage: npm run learning:harness -- workflow|boundaries [--json]

The change-proposal demonstrations, each a session made with createSession (the package's entry)
in a throwaway copy of a small repository, with writes proposed (never applied) and a scripted model.

  workflow    search, read, propose a fix bound to the version read, finish: needs_review
  boundaries  each refusal with its own reason: out-of-scope read, unknown action, a version
              never read, a stale version, an exhausted request budget, a context budget
              too small for the first request
  --json      print the reports as JSON

Exit codes: 0 every case behaved as described, 1 a case did not, 64 usage error.
These are deterministic demonstrations of the mechanisms, not a security evaluation.`;

export async function main(argv: readonly string[]): Promise<number> {
  const json = argv.includes("--json");
  const rest = argv.filter((arg) => arg !== "--json");
  if (rest.length !== 1 || (rest[0] !== "workflow" && rest[0] !== "boundaries")) {
    const help = rest.length === 1 && (rest[0] === "--help" || rest[0] === "-h");
    (help ? process.stdout : process.stderr).write(`${USAGE}\n`);
    return help ? 0 : 64;
  }
  const workflow = rest[0] === "workflow";
  const reports: LessonReport[] = workflow ? [await workflowLesson()] : await boundaryLessons();
  if (json) {
    process.stdout.write(`${JSON.stringify(workflow ? reports[0] : { cases: reports }, null, 2)}\n`);
  } else {
    const blocks = reports.map((report) => renderLesson(report, { showCalls: true }).join("\n"));
    process.stdout.write(`${blocks.join("\n\n")}\n`);
  }
  return reports.every((report) => report.as_expected) ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`learning:harness: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
