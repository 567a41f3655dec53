import { BwrapSandbox } from "./bwrap.js";
import { NoSandbox } from "./none.js";
import type { Sandbox, SandboxConfig } from "./sandbox.js";

/** The sandbox a configuration asks for. Availability is checked when a command is about to run. */
export function createSandbox(config: SandboxConfig): Sandbox {
  if (config.profile === "none") return new NoSandbox();
  return new BwrapSandbox(config.profile, config.bwrapPath, {
    ...(config.readPaths ? { readPaths: config.readPaths } : {}),
    ...(config.readFiles ? { readFiles: config.readFiles } : {}),
    ...(config.protectedPaths ? { protectedPaths: config.protectedPaths } : {}),
    ...(config.harnessSecrets ? { harnessSecrets: config.harnessSecrets } : {}),
    ...(config.deniedPrograms ? { deniedPrograms: config.deniedPrograms } : {}),
  });
}
