import { homedir } from "node:os";
import type { ArtifactStore } from "../artifacts/store.js";
import { NetworkUnavailableError } from "../sandbox/egress-bridge.js";
import type {
  ExecuteResult,
  Executor,
  NetworkAccess,
  ProcessFacts,
  ProcessProfile,
} from "../sandbox/executor.js";
import { SpawnError } from "../sandbox/process.js";
import { SandboxUnavailableError } from "../sandbox/sandbox.js";
import type { WorkspaceFs } from "../workspace/fs.js";

export interface CheckOutcome extends Partial<ProcessFacts> {
  name: string;
  passed: boolean;
  exit_code?: number | null;
  duration_ms: number;
  output?: string;
  /** Artifacts holding the whole output (stdout, then stderr), when it was stored. */
  output_artifacts?: string[];
}

/** A host-side check of the workspace. Completion is decided by these, never by the model. */
export interface AcceptanceCheck {
  readonly name: string;
  /** `artifacts`: where the session keeps whole outputs (a command's, for the model to read). */
  run(signal: AbortSignal, artifacts?: ArtifactStore): Promise<CheckOutcome>;
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
const KILL_GRACE_MS = 2_000;

export interface CommandCheckOptions {
  /** Absolute host path of the workspace: where the command runs. */
  workspace: string;
  /** The executor every process goes through, and the profile acceptance commands run under. */
  executor: Executor;
  profile: ProcessProfile;
  timeoutMs?: number;
  /** Network `policy`: the check's own proxy (its connections journaled); absent, no network. */
  network?: () => NetworkAccess;
}

/**
 * Runs a shell command in the workspace and passes when it exits 0 within the timeout. The
 * command runs the model's code (`npm test` runs the tests the model edited), so it goes through
 * the executor like a shell call: sandboxed by its profile, filtered environment, whole process
 * tree killed at the end, secrets scrubbed. The recorded output tail has the workspace and home
 * paths replaced, so the journal holds no absolute host paths.
 */
export class CommandCheck implements AcceptanceCheck {
  readonly name: string;
  private readonly timeoutMs: number;
  constructor(
    private readonly command: string,
    private readonly options: CommandCheckOptions,
  ) {
    this.name = command;
    this.timeoutMs = options.timeoutMs ?? 600_000;
  }

  async run(signal: AbortSignal, artifacts?: ArtifactStore): Promise<CheckOutcome> {
    const began = Date.now();
    const { executor, profile, workspace } = this.options;
    const facts = executor.factsFor("acceptance", profile);
    const failed = (note: string): CheckOutcome => ({
      name: this.name,
      passed: false,
      exit_code: null,
      duration_ms: Date.now() - began,
      output: note,
      ...facts,
    });
    let result: ExecuteResult;
    try {
      result = await executor.execute({
        purpose: "acceptance",
        argv: ["/bin/sh", "-c", this.command],
        workspace,
        profile,
        timeoutMs: this.timeoutMs,
        killGraceMs: KILL_GRACE_MS,
        signal,
        ...(artifacts !== undefined ? { artifacts } : {}),
        capture: { headBytes: 0, tailBytes: OUTPUT_TAIL_BYTES },
        ...(this.options.network !== undefined ? { egress: this.options.network() } : {}),
      });
    } catch (error) {
      if (error instanceof SandboxUnavailableError) {
        return failed(
          `not run: ${error.message}. Install bubblewrap, or set "acceptance": {"sandbox": "off"} in your user config.`,
        );
      }
      if (error instanceof SpawnError) return failed(`could not start: ${error.code ?? "error"}`);
      if (error instanceof NetworkUnavailableError) return failed(`not run: ${error.message}`);
      throw error;
    }
    const note =
      result.outcome === "timeout"
        ? `timed out after ${this.timeoutMs} ms`
        : result.outcome === "cancelled"
          ? "cancelled"
          : result.exitSignal !== null
            ? `terminated by ${result.exitSignal}`
            : undefined;
    let output = scrubPaths(tailOf(result), workspace);
    if (note) output = `${output}${output.endsWith("\n") || output === "" ? "" : "\n"}${note}`;
    const stored = [result.stdout.artifact, result.stderr.artifact].flatMap((ref) => (ref ? [ref.id] : []));
    return {
      name: this.name,
      passed: result.outcome === "exited" && result.exitCode === 0,
      exit_code: result.outcome === "exited" ? result.exitCode : null,
      duration_ms: Date.now() - began,
      output,
      ...(stored.length > 0 ? { output_artifacts: stored } : {}),
      ...result.facts,
    };
  }
}

/** The end of stdout, then the end of stderr: the two streams are captured separately. */
function tailOf(result: ExecuteResult): string {
  const parts = [result.stdout, result.stderr].map((stream) => `${stream.head}${stream.tail}`);
  const joined = parts.filter((part) => part !== "").join(parts[0]?.endsWith("\n") ? "" : "\n");
  return joined.length > OUTPUT_TAIL_BYTES ? joined.slice(joined.length - OUTPUT_TAIL_BYTES) : joined;
}

function scrubPaths(text: string, workspace: string): string {
  let out = text.split(workspace).join(".");
  const home = homedir();
  if (home.length > 1) out = out.split(home).join("~");
  return out;
}
