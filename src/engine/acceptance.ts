import { spawn } from "node:child_process";
import { homedir } from "node:os";
import type { WorkspaceFs } from "../workspace/fs.js";

export interface CheckOutcome {
  name: string;
  passed: boolean;
  exit_code?: number | null;
  duration_ms: number;
  output?: string;
}

/** A host-side check of the workspace. Completion is decided by these, never by the model. */
export interface AcceptanceCheck {
  readonly name: string;
  run(signal: AbortSignal): Promise<CheckOutcome>;
}

/** Passes when a file's bytes equal the expected text exactly. */
export class FileEqualsCheck implements AcceptanceCheck {
  readonly name: string;
  constructor(
    private readonly fs: WorkspaceFs,
    private readonly path: string,
    private readonly expected: string,
  ) {
    this.name = `file ${path} equals ${JSON.stringify(expected)}`;
  }

  async run(): Promise<CheckOutcome> {
    const began = Date.now();
    let passed = false;
    try {
      const bytes = await this.fs.readFile(this.path);
      passed = Buffer.from(bytes).equals(Buffer.from(this.expected, "utf8"));
    } catch {
      passed = false;
    }
    return { name: this.name, passed, duration_ms: Date.now() - began };
  }
}

const OUTPUT_TAIL_BYTES = 2048;

/**
 * Runs a shell command in the workspace (host side, its own process group, stdin closed) and
 * passes when it exits 0 within the timeout. The recorded output tail has the workspace and
 * home paths replaced, so the journal holds no absolute host paths.
 */
export class CommandCheck implements AcceptanceCheck {
  readonly name: string;
  constructor(
    private readonly command: string,
    private readonly cwd: string,
    private readonly timeoutMs = 600_000,
  ) {
    this.name = command;
  }

  run(signal: AbortSignal): Promise<CheckOutcome> {
    const began = Date.now();
    return new Promise((resolve) => {
      const child = spawn("/bin/sh", ["-c", this.command], {
        cwd: this.cwd,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let tail = Buffer.alloc(0);
      const keep = (chunk: Buffer) => {
        tail = Buffer.concat([tail, chunk]);
        if (tail.length > OUTPUT_TAIL_BYTES) tail = tail.subarray(tail.length - OUTPUT_TAIL_BYTES);
      };
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      const killGroup = () => {
        try {
          if (child.pid) process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      };
      const timer = setTimeout(killGroup, this.timeoutMs);
      const onAbort = () => killGroup();
      signal.addEventListener("abort", onAbort, { once: true });
      const finish = (code: number | null, note?: string) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        killGroup();
        let output = scrubPaths(tail.toString("utf8"), this.cwd);
        if (note) output = `${output}${output.endsWith("\n") || output === "" ? "" : "\n"}${note}`;
        resolve({
          name: this.name,
          passed: code === 0,
          exit_code: code,
          duration_ms: Date.now() - began,
          output,
        });
      };
      child.on("error", (error) =>
        finish(null, `could not start: ${(error as NodeJS.ErrnoException).code ?? "error"}`),
      );
      child.on("exit", (code, sig) => {
        const note = sig
          ? `terminated by ${sig}${Date.now() - began >= this.timeoutMs ? " (timeout)" : ""}`
          : undefined;
        // Give the pipes a moment to drain what the process wrote before it exited.
        setImmediate(() => finish(code, note));
      });
    });
  }
}

function scrubPaths(text: string, workspace: string): string {
  let out = text.split(workspace).join(".");
  const home = homedir();
  if (home.length > 1) out = out.split(home).join("~");
  return out;
}
