import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LIVE_OUTPUT_EVERY_MS, LineUi } from "../../src/ui/line-ui.js";
import { PLAIN, uiContract } from "./contract.js";

uiContract("line mode", () => {
  const input = new PassThrough();
  const output = new PassThrough();
  let written = "";
  output.setEncoding("utf8").on("data", (chunk: string) => {
    written += chunk;
  });
  return {
    ui: new LineUi(input, output, PLAIN),
    enter: (text) => input.write(`${text}\n`),
    answer: (key) => input.write(`${key}\n`),
    leave: () => input.end(),
    screen: async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      return written;
    },
    raw: () => written,
  };
});

describe("line mode: a running call's output", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function lineUi() {
    const output = new PassThrough();
    let written = "";
    output.setEncoding("utf8").on("data", (chunk: string) => {
      written += chunk;
    });
    const ui = new LineUi(new PassThrough(), output, PLAIN);
    ui.start({ submit: () => undefined, interrupt: () => undefined, exit: () => undefined });
    return { ui, written: () => written };
  }
  const tail = (...texts: string[]) => texts.map((text) => ({ text }));

  it("prints each new line once, at most every LIVE_OUTPUT_EVERY_MS, and nothing pending after the call ends", async () => {
    vi.useFakeTimers();
    const { ui, written } = lineUi();
    ui.toolOutput("c1", tail("one"));
    await vi.advanceTimersByTimeAsync(LIVE_OUTPUT_EVERY_MS - 1);
    expect(written()).toBe("");
    await vi.advanceTimersByTimeAsync(1);
    expect(written()).toBe("one\n");
    ui.toolOutput("c1", tail("one", "two"));
    ui.toolOutput("c1", tail("one", "two", "three"));
    await vi.advanceTimersByTimeAsync(LIVE_OUTPUT_EVERY_MS);
    expect(written()).toBe("one\ntwo\nthree\n");
    // The same last lines again: nothing new to print.
    ui.toolOutput("c1", tail("one", "two", "three"));
    await vi.advanceTimersByTimeAsync(LIVE_OUTPUT_EVERY_MS);
    expect(written()).toBe("one\ntwo\nthree\n");
    ui.toolOutput("c1", tail("two", "three", "four"));
    ui.toolFinished("c1", { text: "✓ shell ok" });
    await vi.advanceTimersByTimeAsync(LIVE_OUTPUT_EVERY_MS * 2);
    expect(written()).toBe("one\ntwo\nthree\n✓ shell ok\n");
    await ui.stop();
  });
});
