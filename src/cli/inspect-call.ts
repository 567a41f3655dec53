import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { UsageError } from "../session/usage-error.js";
import { sha256Hex } from "../shared/hash.js";
import { escapeForTerminal, escapeLines, jsonForTerminal } from "../shared/terminal-text.js";
import { commandStreams, type StreamView } from "../ui/call-lines.js";
import type { Style } from "./style.js";

/**
 * `harness inspect SESSION --call ID`: one call's whole result. The journal keeps a bounded
 * projection (a command's first and last bytes, a long result's preview); the whole is in the
 * session's artifacts, read here and checked against the SHA-256 that names it. What is shown is
 * what the result recorded, so it is already scrubbed of secrets.
 */

/** One stream of a command, whole when its artifact is there. */
export interface WholeStream {
  bytes: number;
  /** The stream's text: whole (`complete`), or the recorded head and tail. */
  text: string;
  complete: boolean;
  artifact: string | null;
  /** Why the whole stream could not be read, when it could not. */
  note?: string;
}

export interface CallView {
  call_id: string;
  name: string;
  arguments: unknown;
  status: string;
  error_type?: string;
  summary: string;
  /** The whole content the model was given (from its artifact when the journal holds a preview). */
  content: string;
  content_complete: boolean;
  hint?: string;
  duration_ms: number;
  data?: unknown;
  stdout?: WholeStream;
  stderr?: WholeStream;
}

/** The call's records, or a usage error listing the calls the session has. */
export function findCall(
  records: readonly AnyRecord[],
  callId: string,
  sessionId: string,
): { started?: EventData<"tool.started">; result?: EventData<"tool.result"> } {
  let started: EventData<"tool.started"> | undefined;
  let result: EventData<"tool.result"> | undefined;
  const ids: string[] = [];
  for (const record of records) {
    if (record.type === "tool.started") {
      ids.push(record.data.call_id);
      if (record.data.call_id === callId) started = record.data;
    }
    if (record.type === "tool.result" && record.data.call_id === callId) result = record.data;
  }
  if (started === undefined && result === undefined) {
    const known =
      ids.length === 0
        ? "it has no calls"
        : `its calls: ${ids.slice(0, 10).join(", ")}${ids.length > 10 ? `, … (${ids.length} in all)` : ""}`;
    throw new UsageError(
      `no call "${escapeForTerminal(callId)}" in session ${sessionId}; ${escapeForTerminal(known)}`,
    );
  }
  return { ...(started ? { started } : {}), ...(result ? { result } : {}) };
}

export async function callView(
  found: { started?: EventData<"tool.started">; result?: EventData<"tool.result"> },
  artifactsDir: string | undefined,
): Promise<CallView> {
  const { started, result } = found;
  const callId = (started?.call_id ?? result?.call_id) as string;
  const view: CallView = {
    call_id: callId,
    name: started?.name ?? result?.name ?? "",
    arguments: started?.arguments ?? null,
    status: result?.status ?? "no result recorded",
    summary: result?.summary ?? "",
    content: result?.content ?? "",
    content_complete: result?.artifact === undefined,
    duration_ms: result?.duration_ms ?? 0,
  };
  if (result === undefined) return view;
  if (result.error_type !== undefined) view.error_type = result.error_type;
  if (result.hint !== undefined) view.hint = result.hint;
  if (result.data !== undefined) view.data = result.data;
  if (result.artifact !== undefined) {
    const whole = await readArtifact(artifactsDir, result.artifact.id);
    if (whole !== undefined) {
      view.content = whole.toString("utf8");
      view.content_complete = true;
    }
  }
  const streams = commandStreams(result.data);
  if (streams !== undefined) {
    const data = result.data as Record<string, unknown>;
    for (const name of ["stdout", "stderr"] as const) {
      const stream = streams[name];
      if (stream !== undefined) view[name] = await wholeStream(stream, data[name], artifactsDir);
    }
  }
  return view;
}

async function wholeStream(
  stream: StreamView,
  raw: unknown,
  artifactsDir: string | undefined,
): Promise<WholeStream> {
  const ref = (raw as { artifact?: unknown }).artifact;
  const id =
    typeof ref === "object" && ref !== null && typeof (ref as { id?: unknown }).id === "string"
      ? (ref as { id: string }).id
      : null;
  const recorded = stream.truncated
    ? {
        text: `${stream.head}\n[... ${stream.omitted_bytes} bytes omitted ...]\n${stream.tail}`,
        complete: false,
      }
    : { text: stream.head, complete: true };
  if (stream.bytes === 0) return { bytes: 0, text: "", complete: true, artifact: id };
  if (id !== null) {
    const whole = await readArtifact(artifactsDir, id);
    if (whole !== undefined)
      return { bytes: stream.bytes, text: whole.toString("utf8"), complete: true, artifact: id };
    if (!recorded.complete) {
      return {
        bytes: stream.bytes,
        ...recorded,
        artifact: id,
        note:
          artifactsDir === undefined
            ? "the artifacts are not here (give --workspace DIR where the session ran)"
            : `artifact ${id} is missing or corrupt`,
      };
    }
  }
  return { bytes: stream.bytes, ...recorded, artifact: id };
}

/** An artifact's bytes, only when they are the bytes its id names. */
async function readArtifact(dir: string | undefined, id: string): Promise<Buffer | undefined> {
  if (dir === undefined || !/^[0-9a-f]{64}$/.test(id)) return undefined;
  try {
    const bytes = await readFile(join(dir, id));
    return sha256Hex(bytes) === id ? bytes : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The human form: a header, the arguments, then the whole output. The output is the command's own
 * text, printed as it is (escaped, so it cannot drive the terminal), without a prefix, so it can be
 * read or piped as the command printed it.
 */
export function renderCall(view: CallView, style: Style): string {
  const out: string[] = [];
  const status = view.status === "ok" ? style.green(view.status) : style.red(escapeForTerminal(view.status));
  out.push(
    `${style.bold("call")} ${escapeForTerminal(view.call_id)}  ${style.bold(escapeForTerminal(view.name))}  ${status}` +
      `${view.error_type ? ` ${escapeForTerminal(view.error_type)}` : ""}  ${style.dim(`${view.duration_ms} ms`)}`,
  );
  out.push(`${style.bold("arguments")} ${jsonForTerminal(view.arguments)}`);
  if (view.summary !== "") out.push(`${style.bold("summary")}   ${escapeForTerminal(view.summary)}`);
  if (view.hint) out.push(`${style.bold("hint")}      ${escapeForTerminal(view.hint)}`);
  const body: string[] = [];
  if (view.stdout !== undefined || view.stderr !== undefined) {
    for (const name of ["stdout", "stderr"] as const) {
      const stream = view[name];
      if (stream === undefined) continue;
      const where = stream.artifact === null ? "" : `, artifact ${stream.artifact}`;
      const whole = stream.complete ? "" : ", only its start and end were kept";
      body.push(style.bold(`── ${name} (${stream.bytes} bytes${where}${whole}) ──`));
      if (stream.note) body.push(style.yellow(escapeForTerminal(stream.note)));
      // Joined, not spread: a whole output can have more lines than a call takes arguments.
      if (stream.text !== "") body.push(escapeLines(stream.text).join("\n"));
    }
  } else {
    const whole = view.content_complete ? "" : " (a preview: the whole result's artifact is not here)";
    body.push(style.bold(`── result${whole} ──`));
    body.push(escapeLines(view.content).join("\n"));
  }
  return `${[...out, ...body].join("\n")}\n`;
}
