import type { Launch, LaunchRequest, Sandbox } from "./sandbox.js";

/** No isolation: the command runs as the harness user, in its own process group. */
export class NoSandbox implements Sandbox {
  readonly profile = "none" as const;
  readonly isolating = false;

  async ensureAvailable(): Promise<void> {}

  async prepare(request: LaunchRequest): Promise<Launch> {
    const [file, ...args] = request.argv;
    if (file === undefined) throw new TypeError("argv is empty");
    return { file, args, cwd: request.cwd ?? request.workspace, env: { ...request.env }, extraPipes: 0 };
  }

  async forbidsWrite(): Promise<boolean> {
    return false;
  }
}
