import type { AnyRecord } from "../journal/vocabulary.js";

/**
 * Token estimates for requests. Counting with each provider's tokenizer is slow and vendor
 * specific; UTF-8 bytes / 4 is a cheap basis that is close for English text, code and JSON.
 * The basis is then scaled by what the provider reported for this session's earlier requests
 * (sum of reported input tokens / sum of their bases), so the estimate follows the real
 * tokenizer. Bases and reports are both in the journal, so a resumed session calibrates
 * exactly as the uninterrupted one did.
 */
export const BYTES_PER_TOKEN = 4;

/** The calibration never scales the basis by less or more than this: a provider (or script) reporting nonsense cannot make harness send anything. */
export const MIN_RATIO = 0.5;
export const MAX_RATIO = 4;

export function basisTokens(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}

export class TokenCalibration {
  private basis = 0;
  private reported = 0;

  /** One request: its uncalibrated basis and the input tokens the provider reported for it. */
  add(basis: number, reported: number): void {
    if (basis <= 0 || reported <= 0) return;
    this.basis += basis;
    this.reported += reported;
  }

  get ratio(): number {
    if (this.basis === 0) return 1;
    return Math.min(MAX_RATIO, Math.max(MIN_RATIO, this.reported / this.basis));
  }

  estimate(basis: number): number {
    return Math.ceil(basis * this.ratio);
  }
}

/** One model request's tokens as the journal has them (reported: from the reply, when there was one). */
export interface RequestTokens {
  step: number;
  attempt: number;
  estimated_input_tokens: number | null;
  reported_input_tokens: number | null;
  /** Of the reported input, how much the provider read from / wrote to its prompt cache. */
  cached_input_tokens: number | null;
  cache_write_tokens: number | null;
  context_window: number | null;
  /** Present for a request that was not an ordinary step (a compaction). */
  purpose?: "compaction";
}

/**
 * Tokens per model request and the peaks, for `inspect`. Requests journaled before estimates
 * existed show null estimates.
 */
export function requestTokens(records: readonly AnyRecord[]): {
  requests: RequestTokens[];
  peak: { estimated_input_tokens: number | null; reported_input_tokens: number | null };
} {
  const requests: RequestTokens[] = [];
  let open: RequestTokens | undefined;
  for (const record of records) {
    if (record.type === "model.started") {
      open = {
        step: record.data.step,
        attempt: record.data.attempt,
        estimated_input_tokens: record.data.estimated_input_tokens ?? null,
        reported_input_tokens: null,
        cached_input_tokens: null,
        cache_write_tokens: null,
        context_window: record.data.context_window ?? null,
        ...(record.data.purpose !== undefined ? { purpose: record.data.purpose } : {}),
      };
      requests.push(open);
    } else if ((record.type === "model.reply" || record.type === "context.compacted") && open !== undefined) {
      open.reported_input_tokens = record.data.usage?.input_tokens ?? null;
      open.cached_input_tokens = record.data.usage?.cached_tokens ?? null;
      open.cache_write_tokens = record.data.usage?.cache_write_tokens ?? null;
      open = undefined;
    }
  }
  const peakOf = (values: (number | null)[]) => {
    const present = values.filter((v): v is number => v !== null);
    return present.length === 0 ? null : Math.max(...present);
  };
  return {
    requests,
    peak: {
      estimated_input_tokens: peakOf(requests.map((r) => r.estimated_input_tokens)),
      reported_input_tokens: peakOf(requests.map((r) => r.reported_input_tokens)),
    },
  };
}
