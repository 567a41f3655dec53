import type { LessonReport } from "./lessons.js";

/** A readable report of one lesson, for a terminal; `--json` prints the reports instead. */
export function renderLesson(report: LessonReport, options: { showCalls: boolean }): string[] {
  const lines = [`== ${report.title} (${report.name})`, wrap(report.explains, "   ")];
  if (options.showCalls) {
    for (const call of report.calls) {
      const code = call.code ? ` ${call.code}` : "";
      lines.push(
        `   step ${call.step}  ${call.tool}(${JSON.stringify(call.arguments)}) -> ${call.status}${code}: ${call.summary}`,
      );
    }
  }
  if (report.rejection) {
    const { step, by, code, message } = report.rejection;
    lines.push(`   rejected at step ${step} by ${by}: ${code}`, `     ${message}`);
  }
  lines.push(
    `   status: ${report.status}${report.reason ? ` (${report.reason})` : ""}`,
    `   model requests: ${report.model_requests}, tool calls: ${report.tool_calls}`,
  );
  for (const proposal of report.proposals) {
    lines.push(`   proposal ${proposal.proposal_id} for ${proposal.path} (not applied):`);
    for (const line of proposal.diff.replace(/\n$/, "").split("\n")) lines.push(`     ${line}`);
  }
  lines.push(
    `   repository unchanged by the agent: ${report.repository_unchanged}`,
    `   expected: ${report.expected} -> ${report.as_expected ? "as expected" : "NOT AS EXPECTED"}`,
  );
  return lines;
}

function wrap(text: string, indent: string, width = 96): string {
  const out: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      out.push(indent + line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  if (line !== "") out.push(indent + line);
  return out.join("\n");
}
