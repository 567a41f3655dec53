import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll } from "vitest";
import { BIN, ensureBuilt, removeTempDirs, tempDir } from "./helpers.js";

/** What the chat shows once it is ready for a message. */
export const CHAT_READY = "/help for keys and commands";

/**
 * What a describe block of terminal tests shares: the built CLI, an empty user config of its own
 * (`config`, set before the first test), and every session it `track`s killed after each test.
 */
export function terminalFixture(prefix: string): {
  readonly config: string;
  track(session: TmuxSession): TmuxSession;
  /** The environment the CLI runs with: this block's user config, the tests' journal key, a colour terminal. */
  env(extra?: Record<string, string>): Record<string, string>;
  /** The built CLI with `args` in `cwd`, started in a tracked session. */
  start(cwd: string, args: readonly string[], extra?: Record<string, string>): TmuxSession;
  /** `start`, then wait until the chat is ready for a message. */
  chat(cwd: string, args: readonly string[], extra?: Record<string, string>): Promise<TmuxSession>;
} {
  let config = "";
  const sessions: TmuxSession[] = [];
  beforeAll(async () => {
    ensureBuilt();
    config = join(await tempDir(prefix), "config.json");
    await writeFile(config, "{}");
  });
  afterEach(() => {
    for (const session of sessions.splice(0)) session.kill();
  });
  afterAll(removeTempDirs);
  return {
    get config() {
      return config;
    },
    track(session) {
      sessions.push(session);
      return session;
    },
    env(extra = {}) {
      return {
        HARNESS_CONFIG: config,
        HARNESS_KEY_FILE: process.env.HARNESS_KEY_FILE ?? "",
        TERM: "xterm-256color",
        ...extra,
      };
    },
    start(cwd, args, extra) {
      const session = this.track(new TmuxSession(cwd, args, this.env(extra)));
      session.start();
      return session;
    },
    async chat(cwd, args, extra) {
      const session = this.start(cwd, args, extra);
      await session.waitFor(CHAT_READY);
      return session;
    },
  };
}

/**
 * The built CLI in a real pseudo-terminal: a tmux server of its own (its own socket, so tests
 * never touch a person's tmux), keys sent as a terminal sends them, the screen read back as text.
 */
export class TmuxSession {
  readonly #socket = `harness-test-${process.pid}-${Math.random().toString(36).slice(2)}`;
  readonly #name = "chat";

  constructor(
    readonly cwd: string,
    readonly args: readonly string[],
    readonly env: Record<string, string>,
    /** A shell command line to run instead of the built CLI with `args` (a command harness printed). */
    readonly line?: string,
  ) {}

  start(): void {
    const assignments = Object.entries(this.env).map(([key, value]) => `${key}=${shellQuote(value)}`);
    const program =
      this.line !== undefined
        ? `sh -c ${shellQuote(this.line)}`
        : `${shellQuote(process.execPath)} ${shellQuote(BIN)} ${this.args.map(shellQuote).join(" ")}`;
    const command = `env ${assignments.join(" ")} ${program}; echo "[exited $?]"; sleep 600`;
    this.#tmux(["new-session", "-d", "-s", this.#name, "-x", "110", "-y", "40", "-c", this.cwd, command]);
  }

  /** Type text literally (no key names). */
  type(text: string): void {
    this.#tmux(["send-keys", "-t", this.#name, "-l", text]);
  }

  /** Press keys by tmux name: Enter, Escape, C-c, C-d, S-Enter... */
  press(...keys: string[]): void {
    this.#tmux(["send-keys", "-t", this.#name, ...keys]);
  }

  /** Everything on the screen and in its scrollback, as text. */
  screen(): string {
    return this.#tmux(["capture-pane", "-p", "-J", "-S", "-2000", "-t", this.#name])
      .split("\n")
      .map((line) => line.trimEnd())
      .join("\n")
      .trimEnd();
  }

  async waitFor(expected: string | RegExp, timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.screen();
      if (typeof expected === "string" ? screen.includes(expected) : expected.test(screen)) return screen;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${String(expected)}; the screen:\n${screen}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Wait for an approval question, then past the chat's guard against keys typed as it appeared. */
  async waitForQuestion(): Promise<string> {
    const screen = await this.waitFor("Esc denies");
    await new Promise((resolve) => setTimeout(resolve, 400));
    return screen;
  }

  kill(): void {
    try {
      this.#tmux(["kill-server"]);
    } catch {
      // already gone
    }
  }

  #tmux(args: string[]): string {
    return execFileSync("tmux", ["-L", this.#socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}
