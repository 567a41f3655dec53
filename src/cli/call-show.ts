import { join } from "node:path";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { unifiedDiff } from "../proposals/diff.js";
import { sha256Hex } from "../shared/hash.js";
import { changeNote, commandOutputLines, commandStreams, diffLines } from "../ui/call-lines.js";
import type { ChatLine, UiStyle } from "../ui/ui.js";
import { readFileBeneath } from "../workspace/beneath.js";
import { DIR, type Entry, isDir, isLink, isOversize, isSpecial } from "../workspace/manifest.js";
import { hint, shellQuote } from "./hints.js";

/** A file larger than this is named, not diffed: a glance at a run is not the place for it. */
const DIFF_READ_LIMIT = 512 * 1024;
/** Files of one call whose change is shown. */
const SHOWN_FILES = 20;

/** Where a session's contents are: its workspace, the workspace's `.harness`, the session's artifacts. */
export interface CallShowSource {
  root: string;
  harnessDir: string;
  /** The current session (a chat may switch sessions). */
  sessionId(): string;
  artifactsDir(sessionId: string): string;
}

/**
 * What `harness run` and `harness chat` show of a finished call, from its journal records: the
 * diff of every file it changed (`workspace.changed`: the bytes before from the session's
 * artifacts, after from the workspace or the record's object store, each checked against the hash
 * the record names) and a command's output (`tool.result` data: the scrubbed head and tail the
 * journal keeps). A call's changes are recorded before its result, so they are held until the
 * result arrives and shown under its output. Only a person watching sees this; nothing is recorded.
 */
export class CallShow {
  readonly #pending = new Map<string, ChatLine[]>();

  constructor(
    private readonly source: CallShowSource,
    private readonly style: UiStyle,
    /**
     * Whether to show a command's output after its result. Not where every output line was already
     * printed as it came and stays on screen (the chat's line mode): it would be shown twice.
     */
    private readonly output = true,
  ) {}

  /** Whether a command's output is shown after its result (so a caller need not show it again). */
  get showsOutput(): boolean {
    return this.output;
  }

  /** The lines to show after `record`, in order (none for most records). */
  linesFor(record: AnyRecord): ChatLine[] {
    switch (record.type) {
      case "workspace.changed": {
        const { source, call_id: callId } = record.data;
        if (source !== "tool" && source !== "shell" && source !== "mcp") return [];
        const lines = this.#changeLines(record.data);
        this.#pending.set(callId, [...(this.#pending.get(callId) ?? []), ...lines]);
        return [];
      }
      case "tool.result": {
        const callId = record.data.call_id;
        const changes = this.#pending.get(callId) ?? [];
        this.#pending.delete(callId);
        const streams = this.output ? commandStreams(record.data.data) : undefined;
        const output =
          streams === undefined ? [] : commandOutputLines(this.style, streams, this.#more(callId));
        return [...output, ...changes];
      }
      default:
        return [];
    }
  }

  #more(callId: string): string {
    return hint(`inspect ${this.source.sessionId()} --call ${shellQuote(callId)}`, {
      root: this.source.root,
    });
  }

  #changeLines(change: EventData<"workspace.changed">): ChatLine[] {
    const all: { path: string; before?: Entry; after?: Entry }[] = [
      ...change.created.map(({ path, after }) => ({ path, after })),
      ...change.modified,
      ...change.deleted.map(({ path, before }) => ({ path, before })),
    ];
    const entries = all.filter((entry) => !isDir(entry.after ?? entry.before ?? DIR));
    const lines: ChatLine[] = [];
    // A command that rewrote a whole tree is a glance too: the first files, then how many more.
    for (const { path, before, after } of entries.slice(0, SHOWN_FILES)) {
      if (after === undefined) lines.push(changeNote(this.style, path, "deleted"));
      else lines.push(...this.#fileLines(path, before, after));
    }
    if (entries.length > SHOWN_FILES) {
      lines.push(changeNote(this.style, `${entries.length - SHOWN_FILES} more files`, "changed, not shown"));
    }
    return lines;
  }

  #fileLines(path: string, before: Entry | undefined, after: Entry): ChatLine[] {
    if (isDir(after)) return [];
    if (isLink(after)) return [changeNote(this.style, path, `link to ${after.link}`)];
    if (isSpecial(after) || isOversize(after))
      return [changeNote(this.style, path, "changed (not readable)")];
    const beforeText = before === undefined ? null : this.#beforeText(before);
    const afterText = this.#text(this.#afterBytes(path, after.hash, after.size));
    if (beforeText === undefined || afterText === undefined) {
      return [changeNote(this.style, path, `${before === undefined ? "created" : "changed"} (no text diff)`)];
    }
    const diff = unifiedDiff(path, beforeText, afterText);
    // Only the mode changed (or only a directory entry): nothing of the text to show.
    if (diff === "") return [changeNote(this.style, path, "mode changed")];
    return diffLines(this.style, diff);
  }

  /** The replaced content, as the session kept it; undefined for what has no text (a link, a binary file). */
  #beforeText(before: Entry): string | undefined {
    if (isDir(before) || isLink(before) || isSpecial(before) || isOversize(before)) return undefined;
    const dir = this.source.artifactsDir(this.source.sessionId());
    return this.#text(
      checked(() => readFileBeneath(dir, before.hash, DIFF_READ_LIMIT).bytes, before.hash, before.size),
    );
  }

  /** The content the change left, from the workspace when it still holds it, else from the record's objects. */
  #afterBytes(path: string, hash: string, size: number): Uint8Array | undefined {
    return (
      checked(() => readFileBeneath(this.source.root, path, DIFF_READ_LIMIT).bytes, hash, size) ??
      checked(
        () => readFileBeneath(this.source.harnessDir, join("objects", hash), DIFF_READ_LIMIT).bytes,
        hash,
        size,
      )
    );
  }

  #text(bytes: Uint8Array | undefined): string | undefined {
    if (bytes === undefined || bytes.includes(0)) return undefined;
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return undefined;
    }
  }
}

/** Bytes that are the content the record names (size first: a large file is never read). */
function checked(read: () => Uint8Array, hash: string, size: number): Uint8Array | undefined {
  if (size > DIFF_READ_LIMIT) return undefined;
  try {
    const bytes = read();
    return sha256Hex(bytes) === hash ? bytes : undefined;
  } catch {
    return undefined;
  }
}
