import type { AnyRecord } from "../journal/vocabulary.js";
import { traceIdOf } from "./ids.js";
import { type ContentScrubber, type DerivedSpan, SpanFold } from "./spans.js";

/**
 * A session and its sub-agents as one trace: one fold per session, keyed by the sub-agent path
 * the engine reports (`""` the session itself, `a` its child labelled a, `a/b` a grandchild). A
 * child's turns nest under the parent's `agent` call, which the parent's records named before the
 * child's first record (agent.started is durable before the child's first request).
 */
export class SessionTrace {
  readonly traceId: string;
  readonly #content: ContentScrubber | undefined;
  readonly #folds = new Map<string, SpanFold>();

  constructor(sessionId: string, content?: ContentScrubber) {
    this.traceId = traceIdOf(sessionId);
    this.#content = content;
    this.#folds.set("", new SpanFold({ traceId: this.traceId, ...(content ? { content } : {}) }));
  }

  /**
   * The span of call `callId` of the session (`path` "") or of its sub-agent at `path`: trace
   * context for what the call reaches (an MCP server, a process).
   */
  spanOfCall(callId: string, path = ""): string | undefined {
    return this.#folds.get(path)?.spanOfCall(callId);
  }

  /** A record of the session (`path` "") or of the sub-agent at `path`: the spans it ends. */
  push(path: string, record: AnyRecord): DerivedSpan[] {
    return this.#fold(path).push(record);
  }

  /** Every span still open, in every session of the trace, ended now (see SpanFold.flush). */
  flush(): DerivedSpan[] {
    return [...this.#folds.values()].flatMap((fold) => fold.flush());
  }

  #fold(path: string): SpanFold {
    const known = this.#folds.get(path);
    if (known !== undefined) return known;
    const cut = path.lastIndexOf("/");
    const parentPath = cut < 0 ? "" : path.slice(0, cut);
    const label = path.slice(cut + 1);
    const parentSpanId = this.#folds.get(parentPath)?.spanOfAgent(label);
    const fold = new SpanFold({
      traceId: this.traceId,
      agentLabel: label,
      ...(parentSpanId !== undefined ? { parentSpanId } : {}),
      ...(this.#content ? { content: this.#content } : {}),
    });
    this.#folds.set(path, fold);
    return fold;
  }
}

/** A session's records and its sub-agents' (as `harness inspect` reads them), for a whole export. */
export interface RecordedAgent {
  label: string;
  records: readonly AnyRecord[];
  agents: readonly RecordedAgent[];
}

/**
 * Every span of a recorded session and its sub-agents: the same folds a live export runs, fed the
 * session's records first and then each child's (whose parent's records are then all seen).
 */
export function recordedSpans(
  sessionId: string,
  records: readonly AnyRecord[],
  agents: readonly RecordedAgent[],
  content?: ContentScrubber,
): { traceId: string; spans: DerivedSpan[] } {
  const trace = new SessionTrace(sessionId, content);
  const spans: DerivedSpan[] = [];
  const walk = (path: string, own: readonly AnyRecord[], children: readonly RecordedAgent[]) => {
    for (const record of own) spans.push(...trace.push(path, record));
    for (const child of children)
      walk(path === "" ? child.label : `${path}/${child.label}`, child.records, child.agents);
  };
  walk("", records, agents);
  spans.push(...trace.flush());
  return { traceId: trace.traceId, spans };
}
