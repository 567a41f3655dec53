import { afterEach, describe, expect, it } from "vitest";
import { PiTui } from "../../src/ui/pi-tui.js";
import { PLAIN } from "./contract.js";
import { VirtualTerminal } from "./virtual-terminal.js";

/** The terminal UI's own keys: multi-line input, paste, history, Esc, Ctrl-C, Ctrl-D, the answer guard. */
describe("PiTui keys", () => {
  let ui: PiTui | undefined;
  afterEach(async () => {
    await ui?.stop();
  });

  function open(options: { answerGuardMs?: number; now?: () => number } = {}) {
    const terminal = new VirtualTerminal();
    ui = new PiTui(PLAIN, { terminal, answerGuardMs: 0, ...options });
    const seen = { submitted: [] as string[], interrupts: 0, exits: 0 };
    ui.start({
      submit: (text) => {
        seen.submitted.push(text);
        return undefined;
      },
      interrupt: () => {
        seen.interrupts += 1;
      },
      exit: () => {
        seen.exits += 1;
      },
    });
    const type = (text: string) => {
      for (const char of text) terminal.send(char);
    };
    return { terminal, seen, type, ui };
  }

  const running = { model: "m", inputTokens: 0, outputTokens: 0, running: true };

  it("a trailing backslash and a paste add lines; Enter sends them all", async () => {
    const { terminal, seen, type } = open();
    type("first line\\");
    terminal.send("\r");
    type("second line ");
    terminal.send("\x1b[200~pasted a\npasted b\x1b[201~");
    terminal.send("\r");
    expect(seen.submitted).toEqual(["first line\nsecond line pasted a\npasted b"]);
  });

  it("Up recalls the previous message", async () => {
    const { terminal, seen, type } = open();
    type("remember me");
    terminal.send("\r");
    terminal.send("\x1b[A");
    terminal.send("\r");
    expect(seen.submitted).toEqual(["remember me", "remember me"]);
  });

  it("Esc interrupts a running turn and does nothing between turns", async () => {
    const { terminal, seen, ui } = open();
    terminal.send("\x1b");
    expect(seen.interrupts).toBe(0);
    ui.footer(running);
    terminal.send("\x1b");
    expect(seen.interrupts).toBe(1);
  });

  it("Ctrl-C clears typed input first, then interrupts, and a second Ctrl-C exits", async () => {
    const { terminal, seen, type, ui } = open();
    ui.footer(running);
    type("half a thought");
    terminal.send("\x03");
    expect(seen.interrupts).toBe(0);
    terminal.send("\r");
    expect(seen.submitted).toEqual([]);
    terminal.send("\x03");
    expect(seen.interrupts).toBe(1);
    expect(seen.exits).toBe(0);
    terminal.send("\x03");
    expect(seen.exits).toBe(1);
  });

  it("Ctrl-D exits only on an empty input", async () => {
    const { terminal, seen, type } = open();
    type("x");
    terminal.send("\x04");
    expect(seen.exits).toBe(0);
    terminal.send("\x7f");
    terminal.send("\x04");
    expect(seen.exits).toBe(1);
  });

  it("ignores keys pressed just as a question appears, then takes the next one", async () => {
    let now = 1000;
    const { terminal } = open({ answerGuardMs: 250, now: () => now });
    const answer = ui?.ask(
      { lines: [{ text: "Approval needed: shell" }], question: { text: "Allow? " } },
      new AbortController().signal,
    );
    terminal.send("y");
    now += 300;
    terminal.send("n");
    await expect(answer).resolves.toBe("deny");
  });

  it("while a question shows it owns the input: typed text, /fork and Enter neither answer it nor reach the editor", async () => {
    let now = 1000;
    const { terminal, seen, ui, type } = open({ answerGuardMs: 250, now: () => now });
    ui.footer(running);
    let settled: string | undefined;
    const answer = ui.ask(
      { lines: [{ text: "Approval needed: shell" }], question: { text: "Allow? " } },
      new AbortController().signal,
    );
    void answer.then((value) => {
      settled = value;
    });
    now += 300;
    type("/fork");
    terminal.send("\r");
    // A letter inside a word being typed (the `s` of "yes") answers nothing either.
    type("yes please");
    terminal.send("\r");
    terminal.send("\x1b[200~pasted y\x1b[201~");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBeUndefined();
    expect(seen.submitted).toEqual([]);
    expect(seen.interrupts).toBe(0);
    // After a pause, an answer key answers; the editor is empty, nothing was sent.
    now += 300;
    terminal.send("y");
    await expect(answer).resolves.toBe("once");
    terminal.send("\r");
    expect(seen.submitted).toEqual([]);
  });

  it("p answers only where a prefix is offered; Esc denies and interrupts", async () => {
    const { terminal, seen, ui } = open();
    ui.footer(running);
    const view = { lines: [], question: { text: "Allow? " } };
    const withPrefix = ui.ask({ ...view, prefix: "shell(npm test*)" }, new AbortController().signal);
    terminal.send("p");
    await expect(withPrefix).resolves.toBe("prefix");
    expect(await terminal.screen()).toContain("approved (session: shell(npm test*))");
    let settled: string | undefined;
    const without = ui.ask(view, new AbortController().signal);
    void without.then((value) => {
      settled = value;
    });
    terminal.send("p");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBeUndefined();
    terminal.send("\x1b");
    await expect(without).resolves.toBe("deny");
    expect(seen.interrupts).toBe(1);
  });

  it("a running call has a live line with its elapsed time, replaced by its result", async () => {
    let now = 0;
    const { terminal, ui } = open({ now: () => now });
    ui.toolStarted("c1", { text: "shell sleep 5" }, { text: "[shell#1]" });
    now = 2500;
    ui.toolOutput("c1", [{ text: "  │ tick" }]);
    let screen = await terminal.screen();
    expect(screen).toMatch(/shell sleep 5 2\.5s\n\s*│ tick/);
    ui.toolFinished("c1", { text: "✓ shell ok 2500 ms" });
    screen = await terminal.screen();
    expect(screen).toContain("✓ shell ok 2500 ms");
    expect(screen).not.toContain("sleep 5 2.5s");
  });
});
