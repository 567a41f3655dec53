import { UsageError } from "../session/usage-error.js";

/** A goal is a prompt, not a file to process: one larger than this is refused rather than sent. */
const MAX_GOAL_BYTES = 256 * 1024;

/**
 * The goal of `harness run`: the words after the options, or the text on stdin for `-` or when
 * input is piped and no words were given (`git diff | harness run`, `harness run - < task.md`).
 * A terminal on stdin is never read: there the goal is typed as arguments.
 */
export async function goalFrom(
  words: readonly string[],
  stdin: NodeJS.ReadStream = process.stdin,
): Promise<string> {
  const typed = words.join(" ").trim();
  const fromStdin = typed === "-" || (typed === "" && stdin.isTTY !== true);
  if (!fromStdin) return typed;
  if (stdin.isTTY === true) {
    throw new UsageError(
      "'-' reads the goal from stdin, but stdin is a terminal; pipe the goal in, or type it",
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_GOAL_BYTES) {
      throw new UsageError(
        `the goal on stdin is over ${MAX_GOAL_BYTES / 1024} KiB; put the details in a file the agent can read`,
      );
    }
    chunks.push(buffer);
  }
  const goal = Buffer.concat(chunks).toString("utf8").trim();
  if (goal === "" && typed === "-") throw new UsageError("'-' reads the goal from stdin, which was empty");
  return goal;
}
