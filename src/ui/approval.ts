import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../runtime/ports.js";
import { approvalChoices, collapseSpaceRuns, longCommandNote } from "../shared/approval-text.js";
import { escapeForTerminal, escapeLines, jsonForTerminal } from "../shared/terminal-text.js";
import { type FileSide, fileDiff, unifiedDiff } from "../shared/unified-diff.js";
import type { ApprovalView, ChatLine, ChatUi, UiStyle } from "./ui.js";

/** Lines of a diff preview shown inline; the rest is counted, not shown. */
const PREVIEW_LINES = 40;

/**
 * Reads a workspace file for a change's preview: its bytes, `{ size }` when it is too big to diff
 * (shared/unified-diff.ts MAX_DIFF_BYTES), undefined when absent or unreadable. The preview is
 * the one diff (`fileDiff`) of these bytes, so it is the diff the tool's result then records.
 */
export type CurrentText = (path: string) => Promise<Uint8Array | { size: number } | undefined>;

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Approvals asked inline in the chat: the same once/session/deny decision `TtyApprover` takes,
 * shown with what the call will do (a coloured diff for edit_file and write_file; the exact
 * command, cwd and sandbox for shell). `y` allows once, `s` this exact call for the session, `p`
 * the offered prefix of a command for the session (the rule it adds is shown); `n` or Esc denies,
 * and so does an interrupted turn (the signal). Which other input answers is the UI's to say:
 * on a terminal no other key does (ui.ts `approvalKeyOf`), in line mode any other line denies.
 */
export class UiApprover implements ApprovalPort {
  readonly #ui: ChatUi;
  readonly #style: UiStyle;
  readonly #current: CurrentText;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(ui: ChatUi, style: UiStyle, current: CurrentText) {
    this.#ui = ui;
    this.#style = style;
    this.#current = current;
  }

  /** One question at a time: concurrent asks wait their turn. */
  request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const next = this.#queue.then(() => this.#ask(request, signal));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    if (signal.aborted) return denied("cancelled before the question was shown");
    const view = await approvalView(request, this.#style, this.#current);
    const answer = await this.#ui.ask(view, signal);
    if (signal.aborted) return denied("cancelled while waiting for an answer");
    if (answer === "once") return { decision: "allow", scope: "once", by: "user" };
    if (answer === "session") return { decision: "allow", scope: "session", by: "user" };
    if (answer === "prefix" && request.pattern !== undefined)
      return { decision: "allow", scope: "session", by: "user", pattern: request.pattern };
    return denied("the user did not approve");
  }
}

function denied(reason: string): ApprovalDecision {
  return { decision: "deny", scope: "once", by: "user", reason };
}

/** What a person sees before deciding: the call, its facts, a diff for file changes. */
export async function approvalView(
  request: ApprovalRequest,
  style: UiStyle,
  current: CurrentText,
): Promise<ApprovalView> {
  const lines: ChatLine[] = [
    { text: style.yellow(`Approval needed: ${escapeForTerminal(request.tool)} (${request.effect})`) },
  ];
  const display = request.display;
  const fact = (label: string, value: string) =>
    lines.push({ text: `  ${label.padEnd(8)} ${style.bold(collapseSpaceRuns(escapeForTerminal(value)))}` });
  if (display?.command !== undefined) fact("command:", display.command);
  if (display?.cwd !== undefined) fact("cwd:", display.cwd);
  if (display?.sandbox !== undefined) fact("sandbox:", display.sandbox);
  if (display?.timeoutMs !== undefined) fact("timeout:", `${display.timeoutMs} ms`);
  for (const [label, value] of Object.entries(display?.details ?? {})) fact(`${label}:`, value);
  if (request.reason !== undefined) fact("why:", request.reason);
  const diff = await diffPreview(request, current);
  if (diff !== undefined) lines.push(...coloredDiff(diff, style));
  else if (display?.command === undefined) {
    for (const line of jsonForTerminal(request.arguments, 2).split("\n")) lines.push({ text: `  ${line}` });
  }
  const note =
    display?.command === undefined
      ? undefined
      : longCommandNote(collapseSpaceRuns(escapeForTerminal(display.command)));
  if (note !== undefined) lines.push({ text: style.yellow(`  note:    ${note}`) });
  const choices = approvalChoices(request);
  const prefix = choices.prefix;
  return {
    lines,
    question: {
      text:
        `Allow? ${style.bold("y")} once · ${style.bold("s")} session: ${choices.exact}` +
        (prefix !== undefined ? ` · ${style.bold("p")} session: ${prefix}` : "") +
        ` · ${style.bold("n")} or ${style.bold("Esc")} denies `,
    },
    ...(prefix !== undefined ? { prefix } : {}),
  };
}

/** The unified diff an edit or write would make, or undefined for other tools. */
async function diffPreview(request: ApprovalRequest, current: CurrentText): Promise<string | undefined> {
  const args = request.arguments;
  const path = typeof args.path === "string" ? args.path : undefined;
  if (path === undefined) return undefined;
  if (
    request.tool === "edit_file" &&
    typeof args.old_text === "string" &&
    typeof args.new_text === "string"
  ) {
    const before = asText(await current(path));
    if (before?.includes(args.old_text)) {
      const after =
        args.replace_all === true
          ? before.split(args.old_text).join(args.new_text)
          : before.replace(args.old_text, () => String(args.new_text));
      return unifiedDiff(path, before, after);
    }
    return unifiedDiff(path, args.old_text, args.new_text);
  }
  if (request.tool === "write_file" && typeof args.content === "string") {
    const before: FileSide = (await current(path)) ?? null;
    return fileDiff(path, before, utf8.encode(args.content));
  }
  return undefined;
}

function asText(file: Uint8Array | { size: number } | undefined): string | undefined {
  if (!(file instanceof Uint8Array)) return undefined;
  try {
    return strictUtf8.decode(file);
  } catch {
    return undefined;
  }
}

function coloredDiff(diff: string, style: UiStyle): ChatLine[] {
  const all = escapeLines(diff);
  const colored = (line: string): ChatLine => {
    const text = `  ${line}`;
    if (line.startsWith("+++") || line.startsWith("---")) return { text: style.bold(text) };
    if (line.startsWith("+")) return { text: style.green(text) };
    if (line.startsWith("-")) return { text: style.red(text) };
    if (line.startsWith("@@")) return { text: style.cyan(text) };
    return { text };
  };
  if (all.length <= PREVIEW_LINES) return all.map(colored);
  // The start and the end: a preview cut at its end is where a model would put what matters.
  const half = PREVIEW_LINES / 2;
  return [
    ...all.slice(0, half).map(colored),
    { text: style.yellow(`  … ${all.length - PREVIEW_LINES} diff lines not shown …`) },
    ...all.slice(all.length - half).map(colored),
  ];
}
