import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LIVE_OUTPUT_EVERY_MS, LineUi } from "../../src/ui/line-ui.js";
import { callTag, toolDone, toolLabel } from "../../src/ui/lines.js";
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
    choose: (index) => input.write(`${index + 1}\n`),
    dismiss: () => input.write("\n"),
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

describe("line mode: calls running at once", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("labels every line of a call with its tag, so interleaved output says whose it is; the tool name escaped", async () => {
    vi.useFakeTimers();
    const output = new PassThrough();
    let written = "";
    output.setEncoding("utf8").on("data", (chunk: string) => {
      written += chunk;
    });
    const ui = new LineUi(new PassThrough(), output, PLAIN);
    ui.start({ submit: () => undefined, interrupt: () => undefined, exit: () => undefined });
    const out = (...texts: string[]) => texts.map((text) => ({ text: `    │ ${text}` }));
    ui.toolStarted("a", toolLabel(PLAIN, "shell", { command: "build" }), callTag(PLAIN, "shell", 1));
    ui.toolStarted(
      "b",
      toolLabel(PLAIN, "x\u001b[2Jy", { command: "test" }),
      callTag(PLAIN, "x\u001b[2Jy", 2),
    );
    ui.toolOutput("a", out("a-one"));
    ui.toolOutput("b", out("b-one"));
    await vi.advanceTimersByTimeAsync(LIVE_OUTPUT_EVERY_MS);
    ui.toolOutput("b", out("b-one", "b-two"));
    ui.toolOutput("a", out("a-one", "a-two"));
    await vi.advanceTimersByTimeAsync(LIVE_OUTPUT_EVERY_MS);
    ui.toolFinished(
      "b",
      toolDone(PLAIN, { name: "x\u001b[2Jy", status: "ok", duration_ms: 5, summary: "exit 0" }),
    );
    ui.toolFinished("a", toolDone(PLAIN, { name: "shell", status: "ok", duration_ms: 9, summary: "exit 0" }));
    expect(written.split("\n")).toEqual([
      "[shell#1] … shell build",
      "[x\\x1b[2Jy#2] … x\\x1b[2Jy test",
      "[shell#1]    │ a-one",
      "[x\\x1b[2Jy#2]    │ b-one",
      "[x\\x1b[2Jy#2]    │ b-two",
      "[shell#1]    │ a-two",
      "[x\\x1b[2Jy#2] ✓ x\\x1b[2Jy ok 5 ms  exit 0",
      "[shell#1] ✓ shell ok 9 ms  exit 0",
      "",
    ]);
    expect(written).not.toContain("\u001b");
    await ui.stop();
  });
});

describe("line mode: an approval's answer is the next line", () => {
  function lineUi() {
    const input = new PassThrough();
    const output = new PassThrough();
    let written = "";
    output.setEncoding("utf8").on("data", (chunk: string) => {
      written += chunk;
    });
    const ui = new LineUi(input, output, PLAIN);
    ui.start({ submit: () => undefined, interrupt: () => undefined, exit: () => undefined });
    return { ui, input, written: () => written };
  }
  const view = { lines: [], question: { text: "Allow? " } };

  it("an empty line or any other line denies (a line is typed on purpose)", async () => {
    for (const line of ["", "/fork", "whatever"]) {
      const { ui, input } = lineUi();
      const answer = ui.ask(view, new AbortController().signal);
      input.write(`${line}\n`);
      await expect(answer).resolves.toBe("deny");
      await ui.stop();
    }
  });

  it("p takes the offered prefix, and is a denial where none is offered", async () => {
    const offered = lineUi();
    const answer = offered.ui.ask({ ...view, prefix: "shell(npm test*)" }, new AbortController().signal);
    offered.input.write("p\n");
    await expect(answer).resolves.toBe("prefix");
    expect(offered.written()).toContain("approved (session: shell(npm test*))");
    await offered.ui.stop();
    const none = lineUi();
    const denied = none.ui.ask(view, new AbortController().signal);
    none.input.write("p\n");
    await expect(denied).resolves.toBe("deny");
    await none.ui.stop();
  });
});
