import { describe, expect, it } from "vitest";
import { callTag, note, own, toolDone, toolLabel } from "../../src/ui/lines.js";
import type { ChatHandlers, ChatUi, UiStyle } from "../../src/ui/ui.js";

export const PLAIN: UiStyle = {
  bold: (t) => t,
  dim: (t) => t,
  red: (t) => t,
  green: (t) => t,
  yellow: (t) => t,
  cyan: (t) => t,
};

/** How a test acts as the person in front of one UI implementation. */
export interface UiDriver {
  ui: ChatUi;
  /** Type a message and press Enter. */
  enter(text: string): void;
  /** Answer the open question: a key (line mode: a line); "" is Enter alone. */
  answer(key: string): void;
  /** Choose row `index` of the open picker as this UI offers (arrow keys and Enter; its number). */
  choose(index: number): void;
  /** Close the open picker without choosing (Esc; an empty line). */
  dismiss(): void;
  /** Leave as this UI offers: Ctrl-D on an empty input, or the input closing. */
  leave(): void;
  /** What the person sees, as text. */
  screen(): Promise<string>;
  /** Everything written to the terminal, raw. */
  raw(): string;
}

interface Seen {
  submitted: string[];
  interrupts: number;
  exits: number;
}

function started(driver: UiDriver): Seen {
  const seen: Seen = { submitted: [], interrupts: 0, exits: 0 };
  const handlers: ChatHandlers = {
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
  };
  driver.ui.start(handlers);
  return seen;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

const VIEW = {
  lines: [
    own(PLAIN, "plain", "Approval needed: shell (external)"),
    note(PLAIN, "plain", "  command: ", "rm -rf build"),
  ],
  question: own(PLAIN, "plain", "Allow? y once, s session, anything else denies: "),
};

/** The contract every ChatUi implementation passes. */
export function uiContract(name: string, make: () => UiDriver): void {
  describe(`ChatUi contract: ${name}`, () => {
    it("hands a typed message to submit", async () => {
      const driver = make();
      const seen = started(driver);
      driver.enter("fix the failing test");
      await settle();
      expect(seen.submitted).toEqual(["fix the failing test"]);
      await driver.ui.stop();
    });

    it("shows streamed model text under the model prefix, with terminal controls escaped", async () => {
      const driver = make();
      started(driver);
      driver.ui.modelText("Hello, ");
      driver.ui.modelText("wor");
      driver.ui.modelText("ld\nsecond \u001b[2Jline\u202e");
      driver.ui.endModelText();
      driver.ui.line(own(PLAIN, "plain", "after"));
      const screen = await driver.screen();
      expect(screen).toContain("│ Hello, world");
      expect(screen).toContain("│ second \\x1b[2Jline\\u202e");
      expect(driver.raw()).not.toContain("\u001b[2J");
      expect(driver.raw()).not.toContain("\u202e");
      expect(screen.indexOf("after")).toBeGreaterThan(screen.indexOf("second"));
      await driver.ui.stop();
    });

    it("shows a picker's rows and resolves with the row chosen", async () => {
      const driver = make();
      started(driver);
      const rows = [
        own(PLAIN, "plain", "turn 2  first row"),
        note(PLAIN, "plain", "    second \u001b[2Jrow"),
      ];
      const picked = driver.ui.pick(
        { title: own(PLAIN, "plain", "Pick one:"), rows },
        new AbortController().signal,
      );
      await settle();
      const screen = await driver.screen();
      expect(screen).toContain("Pick one:");
      expect(screen).toContain("turn 2  first row");
      expect(screen).toContain("second \\x1b[2Jrow");
      expect(driver.raw()).not.toContain("\u001b[2J");
      driver.choose(1);
      expect(await picked).toBe(1);
      await driver.ui.stop();
    });

    it("resolves a dismissed or aborted picker with nothing chosen", async () => {
      const driver = make();
      started(driver);
      const rows = [own(PLAIN, "plain", "only row")];
      const dismissed = driver.ui.pick(
        { title: own(PLAIN, "plain", "Pick:"), rows },
        new AbortController().signal,
      );
      await settle();
      driver.dismiss();
      expect(await dismissed).toBeUndefined();
      const abort = new AbortController();
      const aborted = driver.ui.pick({ title: own(PLAIN, "plain", "Pick:"), rows }, abort.signal);
      await settle();
      abort.abort();
      expect(await aborted).toBeUndefined();
      await driver.ui.stop();
    });

    it("shows a finished call's line", async () => {
      const driver = make();
      started(driver);
      driver.ui.toolStarted(
        "c1",
        toolLabel(PLAIN, "shell", { command: "npm test" }),
        callTag(PLAIN, "shell", 1),
      );
      driver.ui.toolFinished(
        "c1",
        toolDone(PLAIN, { name: "shell", status: "ok", duration_ms: 12, summary: "exit 0" }),
      );
      const screen = await driver.screen();
      expect(screen).toContain("✓ shell ok 12 ms  exit 0");
      await driver.ui.stop();
    });

    for (const [key, expected] of [
      ["y", "once"],
      ["s", "session"],
      ["n", "deny"],
    ] as const) {
      it(`answers an approval typed as ${JSON.stringify(key)} with ${expected}, after showing it`, async () => {
        const driver = make();
        started(driver);
        const answer = driver.ui.ask(VIEW, new AbortController().signal);
        await settle();
        const screen = await driver.screen();
        expect(screen).toContain("command: rm -rf build");
        expect(screen).toContain("Allow? y once, s session");
        driver.answer(key);
        await expect(answer).resolves.toBe(expected);
        await driver.ui.stop();
      });
    }

    it("denies a question when its turn is interrupted", async () => {
      const driver = make();
      started(driver);
      const controller = new AbortController();
      const answer = driver.ui.ask(VIEW, controller.signal);
      await settle();
      controller.abort();
      await expect(answer).resolves.toBe("deny");
      await driver.ui.stop();
    });

    it("leaves when the person leaves", async () => {
      const driver = make();
      const seen = started(driver);
      driver.leave();
      await settle();
      expect(seen.exits).toBe(1);
      await driver.ui.stop();
    });

    it("shows the footer's model and tokens when a turn ends", async () => {
      const driver = make();
      started(driver);
      const footer = {
        model: "gpt-test",
        inputTokens: 1200,
        outputTokens: 34,
        contextUsed: 800,
        contextWindow: 8000,
      };
      driver.ui.footer({ ...footer, running: true });
      driver.ui.footer({ ...footer, running: false });
      const screen = await driver.screen();
      expect(screen).toContain("gpt-test · 1200 in / 34 out · context 10% of 8000");
      await driver.ui.stop();
    });
  });
}
